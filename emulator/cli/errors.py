"""How every ``rmqemu`` command turns an exception into a message and an exit code.

Everything rmqemu raises on purpose is an :class:`~rmqemu.errors.RmqemuError` (the tree is in
``rmqemu/errors.py``): bad input (a topology, a fault verb's arguments, a run that cannot be
read, a run directory that is missing) exits 2 with one clear line per problem; anything a run or
a cluster refused exits 1. No traceback reaches a user unless ``RMQEMU_DEBUG=1`` is set.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

import click

from rmqemu.errors import (
    ExpectationError,
    RmqemuError,
    RunDirError,
    RunInputError,
    SpecError,
    TopologyError,
    UsageError,
)


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def handle_errors(fn: Callable[..., Any] | None = None, *, refused: int = 1) -> Any:
    """Bad input (a topology, a fault verb's arguments) exits 2, anything a run or a cluster
    refuses exits ``refused`` (1; ``launch`` gives 3, "the run broke", docs/design.md §8); each
    as clear lines on stderr, no traceback unless RMQEMU_DEBUG=1. Shared by every command group
    (admin, fault verbs); ``@handle_errors`` or ``@handle_errors(refused=3)``."""
    if fn is None:
        return functools.partial(handle_errors, refused=refused)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TopologyError as exc:  # one line per problem, by design
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except (SpecError, UsageError, RunInputError, RunDirError,
                ExpectationError) as exc:  # bad arguments, no such run
            click.echo(f"error: {_one_line(str(exc))}", err=True)
            sys.exit(2)
        except RmqemuError as exc:
            if os.environ.get("RMQEMU_DEBUG"):
                raise
            notes = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))  # e.g. a heal that failed after
            click.echo(f"error: {_one_line(str(exc) + notes)}", err=True)
            sys.exit(refused)

    return wrapper
