"""ali-ons sends text as real applications write it -- bodies, keys and a user property holding
line-breaking characters other than "\\n" (U+0085, U+2028, U+2029, VT, FF, U+001C-1E, CR), JSON as
JavaScript writes it, astral characters -- next to arbitrary bytes and bodies over 4 KiB (ali-ons
deflates those); then every broker is killed (SIGKILL) and restarted, and a consumer group new to
the cluster still reads every acked message byte for byte, with its keys and properties (a killed
broker keeps its store directory: docs/design.md §4; docs/real-clients.md "Hostile input").

The messages are this test's own data, drawn with a seeded RNG (SEED): every kind below appears,
in a random order, with random content.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest

from rmqemu import emulator
from tests.realclients.drivers import NodeProcess, NodeProcs, wait_exit, wait_for

pytestmark = pytest.mark.integration

SEED, SENDS = 35, 300
TOPIC, BROKERS = "RealTopic", ["broker-a-0", "broker-b-0"]
TOPOLOGY: dict[str, Any] = {
    "name": "alions-restart-text", "seed": SEED, "timing": {"scale": 1.0}, "namesrvs": 1,
    "brokers": [{"name": "broker-a", "slaves": 0}, {"name": "broker-b", "slaves": 0}],
    "topics": [{"name": TOPIC, "brokers": ["broker-a", "broker-b"], "queues": 4}],
    "remoting": True, "duration": "600s",
}
# ali-ons's intervals, shortened so that a route change and a rebalance take a second, not 30
FAST = {"pollNameServerInteval": 1000, "heartbeatBrokerInterval": 2000, "rebalanceInterval": 1000,
        "persistConsumerOffsetInterval": 1000}
# what str.splitlines (and Unicode line breaking) takes for the end of a line, beside "\n"
BREAKS = ["\u0085", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r", "\r\n", "\n"]
WORDS = string.ascii_letters + string.digits + string.punctuation + " "
# the line breaks a JSON writer leaves as they are (it writes the C0 ones as \\uXXXX)
RAW_BREAKS = "\u0085\u2028\u2029"
# code point ranges a character is drawn from (no surrogates: a lone one is not text, UTF-8 cannot hold it)
RANGES = [(0x20, 0x7E), (0x80, 0xFF), (0x100, 0xD7FF), (0xE000, 0xFFFD), (0x1F300, 0x1FAFF), (0x10000, 0x10FFFF)]


def hostile_text(rng: random.Random, n: int) -> str:
    """``n`` pieces: line breaks, NUL and tab, characters from anywhere in Unicode, emoji. Never
    U+0001/U+0002, RocketMQ's separators in a message's properties (a U+0002 in a value ends it)."""
    pieces = []
    for _ in range(n):
        pick = rng.random()
        if pick < 0.25:
            pieces.append(rng.choice(BREAKS))
        elif pick < 0.3:
            pieces.append(rng.choice("\x00\t"))
        else:
            low, high = rng.choice(RANGES)
            pieces.append(chr(rng.randint(low, high)))
    return "".join(pieces)


def big(make: Callable[[], bytes]) -> bytes:
    """``make()`` repeated until over 4 KiB: ali-ons deflates a body of 4096 bytes or more."""
    out = b""
    while len(out) <= 4096:
        out += make()
    return out


# each kind of body: how to draw one
KINDS: dict[str, Callable[[random.Random], bytes]] = {
    "ascii": lambda r: "".join(r.choice(WORDS) for _ in range(r.randint(1, 80))).encode(),
    "breaks": lambda r: hostile_text(r, r.randint(1, 60)).encode(),
    "js-json": lambda r: json.dumps({"id": r.randrange(10**9), "text": hostile_text(r, 30),
                                     "tags": [hostile_text(r, 4) for _ in range(3)]},
                                    ensure_ascii=False, separators=(",", ":")).encode(),
    "astral": lambda r: "".join(chr(r.randint(0x1F300, 0x1FAFF) if r.random() < 0.5 else r.randint(0x10000, 0x10FFFF))
                                for _ in range(r.randint(1, 40))).encode(),
    "bytes": lambda r: r.randbytes(r.randint(1, 300)) + b"\x00" * r.randint(0, 3),
    "text+junk": lambda r: hostile_text(r, 20).encode() + r.choice([b"\x85", b"\xff", b"\xe2\x80"]),
    "big-text": lambda r: big(lambda: hostile_text(r, 400).encode()),
    "big-bytes": lambda r: r.randbytes(r.randint(4097, 9000)),
    "empty": lambda r: b"",  # drawn once: ali-ons sends it, RocketMQ's broker stores it
}


def messages(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` distinct bodies, the empty one and every other kind in turn, shuffled; keys on about a
    third of them and, drawn apart, a user property (sometimes a second, hostile name too) on about a third."""
    others = [kind for kind in KINDS if kind != "empty"]
    kinds = ["empty"] + [others[i % len(others)] for i in range(n - 1)]
    rng.shuffle(kinds)
    out, seen = [], set()
    for kind in kinds:
        body = KINDS[kind](rng)
        while body in seen:
            body = KINDS[kind](rng)
        seen.add(body)
        keys = [hostile_text(rng, rng.randint(1, 8)) for _ in range(rng.randint(1, 3))] if rng.random() < 0.35 else []
        props = {"note": hostile_text(rng, rng.randint(1, 12))} if rng.random() < 0.35 else {}
        if props and rng.random() < 0.3:
            props["n" + hostile_text(rng, 3)] = hostile_text(rng, 5)
        out.append({"kind": kind, "body": body, "keys": keys, "properties": props})
    return out


def queue_counts(c: emulator.Cluster) -> dict[tuple[str, int], int]:
    """(broker node, queueId) -> how many messages of TOPIC that broker's store holds."""
    out = {}
    for node in BROKERS:
        for key, count in c.state(node)["queues"].items():
            topic, _, qid = key.rpartition(":")
            if topic == TOPIC:
                out[(node, int(qid))] = count
    return out


def consumed(consumer: NodeProcess) -> dict[str, dict[str, Any]]:
    """msgId -> the first line of its consumption."""
    out: dict[str, dict[str, Any]] = {}
    for line in consumer.lines():
        if line.get("action") == "consumed":
            out.setdefault(line["msgId"], line)
    return out


def problems(sent: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]], msgs: list[dict[str, Any]],
             where: str) -> list[str]:
    """What a consumer group did not read as sent: missing messages, other bodies, other properties."""
    missing = [m for m in sent if m not in got]
    changed = [m for m in sent if m in got and got[m]["sha256"] != sent[m]["sha256"]]
    props = [m for m in sent if m in got and any(got[m]["properties"].get(k) != v
                                                 for k, v in sent[m]["properties"].items() if k != "TAGS")]
    if not (missing or changed or props):
        return []
    lost = [msgs[sent[m]["i"]] for m in missing]
    own = [m for m in lost if any(ch in text for ch in RAW_BREAKS for text in [  # ali-ons deflates 4 KiB bodies
        m["body"].decode("utf-8", "replace") if len(m["body"]) < 4096 else "", *m["keys"], *m["properties"],
        *m["properties"].values()])]
    first = [(m["body"][:60], m["keys"], m["properties"]) for m in lost[:4]]
    return [f"{where}: read {len(sent) - len(missing)}/{len(sent)} acked messages; missing by body kind "
            f"{dict(Counter(m['kind'] for m in lost))}, {len(own)} of them with U+0085/U+2028/U+2029 in their own "
            f"body, keys or properties; first missing (body[:60], keys, user properties): {first!r}",
            f"{where}: {len(changed)} with another body, first {[got[m]['body_b64'][:40] for m in changed[:3]]}; "
            f"{len(props)} with other properties, first "
            f"{[(sent[m]['properties'], got[m]['properties']) for m in props[:2]]!r}"]


def test_every_acked_text_message_survives_a_restart_of_every_broker(tmp_path: Path, node_procs: NodeProcs) -> None:
    msgs = messages(random.Random(SEED), SENDS)
    assert {m["kind"] for m in msgs} == set(KINDS)
    with emulator.Cluster(TOPOLOGY, run_dir=tmp_path / "run") as c:
        group = {"nameSrv": c.namesrv_addr, "topic": TOPIC, **FAST}
        before = node_procs.consumer({**group, "consumerGroup": "CG_BEFORE"})
        producer = node_procs.producer({
            **group, "producerGroup": "PG_TEXT", "count": SENDS,
            "bodies": [base64.b64encode(m["body"]).decode() for m in msgs],
            "keys": [m["keys"] for m in msgs], "user_properties": [m["properties"] for m in msgs]})
        assert wait_exit(producer, 120) == 0, producer.describe()
        sent = {line["msgId"]: line for line in producer.lines() if line.get("ok")}
        assert len(sent) == SENDS, producer.describe()  # no fault yet: every send is acked
        stored = queue_counts(c)
        wait_for(lambda: set(sent) <= set(consumed(before)), 60, "CG_BEFORE reads every acked message",
                 describe=before.describe)
        assert not (found := problems(sent, consumed(before), msgs, "CG_BEFORE")), "\n".join(found)
        if before.stdin:
            before.stdin.close()  # it closes in the background; node_procs reaps it
        kill = c.kill(BROKERS, restart_after="0.5s")
        c.wait_for(lambda: not kill.active, 60, "both brokers restarted")
        c.launcher.wait_registered()
        restored = queue_counts(c)
        after = node_procs.consumer({**group, "consumerGroup": "CG_AFTER"})

        held = {(node, qid, off) for (node, qid), n in restored.items() for off in range(n)}

        def caught_up() -> tuple[dict[str, dict[str, Any]]] | None:
            """CG_AFTER's reads, once it has read every offset the restarted stores hold."""
            got = consumed(after)
            return (got,) if held <= {(f"{line['broker']}-0", line["queueId"], line["queueOffset"])
                                      for line in got.values()} else None
        [got] = wait_for(caught_up, 60, "CG_AFTER reads what the restarted brokers hold", describe=after.describe)
        print(f"alions-restart-text: CG_AFTER read {len(set(sent) & set(got))}/{len(sent)}; the stores held "
              f"{sum(stored.values())} before the restart, {sum(restored.values())} after")
        found = problems(sent, got, msgs, "CG_AFTER")
        assert not found, "\n".join([*found, f"the stores before the restart {stored}, after {restored}"])
