"""Hypothesis strategies for a user's arbitrary data: text rich in the characters that have
broken line-based readers before (docs/design.md §6, "JSON-lines files"), and bytes."""

from __future__ import annotations

from hypothesis import strategies as st

#: every character ``str.splitlines()`` breaks at, "\n" itself, and JSON's escapes
BREAKERS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r\n\"\\\x00"


def text(min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Any Unicode text (no lone surrogates: UTF-8 cannot carry them), often with a breaker."""
    return st.text(alphabet=st.one_of(st.sampled_from(list(BREAKERS)), st.characters(codec="utf-8")),
                   min_size=min_size, max_size=max_size)


def bodies(max_size: int = 64) -> st.SearchStrategy[str | bytes]:
    """A message body as a client hands it over: text, its UTF-8 bytes, or any bytes."""
    return st.one_of(text(max_size=max_size), text(max_size=max_size).map(str.encode), st.binary(max_size=max_size))
