"""Separate processes sharing one PostgreSQL store (children run tests/pg_worker.py): racing
opens, concurrent writers with compression and edits checked against the stateful test's
invariants afterwards, ``kill -9`` mid-commit while the others go on, and how soon a commit in
one process reaches another. Skipped, saying why, where PostgreSQL is not available."""

from __future__ import annotations

import json
import re
import statistics
import time
from typing import Any

import pytest
import trio
from pg_checks import Child, check_sequences, rows
from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url)

from asides import AutobiographicalStrategy, PassthroughStrategy, open_runtime
from asides.store import content_from_json, text
from asides.store._message_ids import ids_from_record

pytestmark = pytest.mark.slow

RACERS = 8
RACES = 100


def test_eight_processes_racing_opens_claim_exactly_once_every_time(pg_url):
    children = [Child("race", pg_url, str(i)) for i in range(RACERS)]
    try:
        for child in children:
            assert child.expect() == "READY"
        winners = []
        for race in range(RACES):
            for child in children:
                child.send(f"go {race}")
            outcomes = [child.expect().split() for child in children]
            assert all(o[:2] == ["R", str(race)] for o in outcomes)
            claimed = [i for i, o in enumerate(outcomes) if o[2] == "claimed"]
            assert len(claimed) == 1, (race, outcomes)
            winner = f"p{claimed[0]}"
            assert all(o[3] == winner for o in outcomes if o[2] == "refused"), (race, outcomes)
            winners.append(claimed[0])
    finally:
        for child in children:
            child.close()
    claims = [(row[4], json.loads(row[5])) for row in rows(pg_url) if row[3] == "state"]
    assert sorted(key for key, _ in claims) == sorted(f"race/{r}/reader" for r in range(RACES)), "one record per race, none from a loser"
    assert [value for _, value in sorted(claims, key=lambda c: int(c[0].split("/")[1]))] == [f"p{w}" for w in winners]
    print(f"\nwinners over {RACES} races: {sorted({w: winners.count(w) for w in set(winners)}.items())}")


# -- concurrent writers, compiles, drains and edits ------------------------------------------------

WRITERS = 4
MESSAGES = 24
MARKER = re.compile(r"M\d+x\d+")
READERS = ("ann", "bob", "cleo")


def _outputs_until_done(children: list[Child]) -> list[list[str]]:
    """Each child's lines up to its ``DONE``; every child is closed afterwards."""
    outputs: list[list[str]] = []
    try:
        for child in children:
            lines = []
            while (line := child.expect(timeout=300)) != "DONE":
                lines.append(line)
            outputs.append(lines)
    finally:
        for child in children:
            child.close()
    return outputs


def _final_contents(outputs: list[list[str]]) -> tuple[dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Acknowledged messages' sequences, and their contents after the last acknowledged edit
    (each process edits only its own messages, so its last line for a message is the last word)."""
    sequences: dict[str, int] = {}
    contents: dict[str, list[dict[str, Any]]] = {}
    for lines in outputs:
        for line in lines:
            kind, rest = line.split(" ", 1)
            if kind == "A":
                message_id, sequence, body = rest.split(" ", 2)
                sequences[message_id] = int(sequence)
                contents[message_id] = json.loads(body)
            elif kind == "E":
                message_id, body = rest.split(" ", 1)
                contents[message_id] = json.loads(body)
    return sequences, contents


def _audiences(contents: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[str, ...] | None]:
    """Marker -> the final audience of the block holding it (``None``: everyone)."""
    found: dict[str, tuple[str, ...] | None] = {}
    for blocks in contents.values():
        for block in blocks:
            for marker in MARKER.findall(block.get("text", "")):
                audience = block.get("audience")
                found[marker] = None if audience is None else tuple(audience)
    return found


def _leaks(text_seen: str, reader: str | None, audiences: dict[str, tuple[str, ...] | None]) -> list[str]:
    return [m for m in MARKER.findall(text_seen) if audiences.get(m) is not None and reader not in (audiences[m] or ())]


async def _check_final_state(url: str, sequences: dict[str, int], contents: dict[str, Any]) -> None:
    audiences = _audiences(contents)
    async with open_runtime(url) as rt:
        store = rt.store
        # every acknowledged message, with the sequence it was acknowledged with and its last content
        for message_id, sequence in sequences.items():
            stored = store.get_message("main", message_id)
            assert stored is not None and stored.sequence == sequence, message_id
            assert list(stored.content) == list(content_from_json(contents[message_id])), message_id
        # reader records never change hands; floors never lower
        for reader in READERS:
            assert store.get_state("main", f"agents/{reader}/reader") == reader
        # nothing a namespace stored, and nothing its reader is compiled, holds a block hidden from it
        private_in_records = 0
        for key, value in store.state_items("main").items():
            namespace = key.split("/", 2)
            owner = namespace[1] if namespace[0] == "agents" and len(namespace) > 2 else None
            assert not _leaks(json.dumps(value), owner, audiences), key
            private_in_records += sum(1 for m in MARKER.findall(json.dumps(value)) if audiences.get(m) is not None)
        assert private_in_records, "the premise: compression stored private blocks for their readers"
        for reader in READERS:
            strategy = AutobiographicalStrategy(target_chunk_tokens=200, head_window_tokens=0, recent_window_tokens=0)
            manager = await rt.open_manager(f"agents/{reader}", strategy=strategy, view_reader=reader)
            compiled = await manager.preview_context(max_tokens=1_000_000, reserve_for_response=0)
            seen = " ".join(b.text for m in compiled.messages for b in m.content if hasattr(b, "text"))
            assert not _leaks(seen, reader, audiences), reader
        nobody = await rt.open_manager("checker", strategy=PassthroughStrategy())
        compiled = await nobody.preview_context(max_tokens=1_000_000, reserve_for_response=0)
        assert not _leaks(" ".join(b.text for m in compiled.messages for b in m.content if hasattr(b, "text")), None, audiences)


def test_four_processes_writing_compiling_and_draining_keep_every_invariant(pg_url):
    """Each reader's namespace is open in every process and compressed in one of them (where
    several compress one namespace, see the test below)."""
    compress = {0: "ann", 1: "bob", 2: "cleo", 3: ""}
    children = [Child("work", pg_url, str(i), str(MESSAGES), compress[i]) for i in range(WRITERS)]
    outputs = _outputs_until_done(children)
    sequences, contents = _final_contents(outputs)
    assert len(sequences) == WRITERS * MESSAGES, "zero lost acknowledged writes"
    assert any(line.startswith("E ") for lines in outputs for line in lines), "the premise: some edits went through"
    found = rows(pg_url)
    check_sequences(found)
    floors: dict[str, list[int]] = {}
    readers: dict[str, set[str]] = {}
    for _id, _branch, _seq, kind, ref, body in found:
        if kind == "state" and ref.endswith("/narrowing-floor"):
            floors.setdefault(ref, []).append(json.loads(body))
        if kind == "state" and ref.endswith("/reader"):
            readers.setdefault(ref, set()).add(json.loads(body))
    assert all(values == sorted(set(values)) for values in floors.values()), floors  # every write raised it
    assert all(len(values) == 1 for values in readers.values()), readers
    assert floors, "compression ran (and recorded its reads)"
    trio.run(_check_final_state, pg_url, sequences, contents)


# -- kill -9 mid-commit ------------------------------------------------------------------------------


def test_kill_9_of_a_writer_mid_commit_while_the_others_go_on(pg_url):
    acknowledged: dict[str, int] = {}

    def take(child: Child, count: int) -> None:
        for _ in range(count):
            _, message_id, sequence = child.expect(timeout=120).split()
            acknowledged[message_id] = int(sequence)

    survivors = [Child("crash", pg_url, str(i)) for i in range(2)]
    victims = []
    try:
        for round_ in range(5):
            victim = Child("crash", pg_url, str(10 + round_))
            victims.append(victim)
            take(victim, 10)
            victim.kill()  # it was committing its next message: kill -9 mid-commit
            for line in victim.remaining():
                _, message_id, sequence = line.split()
                acknowledged[message_id] = int(sequence)
            for survivor in survivors:
                take(survivor, 10)  # the others go on, not held by a lock the dead process held
    finally:
        for child in survivors + victims:
            child.kill()
    for child in survivors:
        for line in child.remaining():
            _, message_id, sequence = line.split()
            acknowledged[message_id] = int(sequence)
    found = rows(pg_url)
    check_sequences(found)
    stored = {str(row[0]): row[2] for row in found if row[3] == "message"}
    assert {k: stored.get(k) for k in acknowledged} == acknowledged, "every acknowledged write is there, as acknowledged"


# -- seeing another process's commits ----------------------------------------------------------------


def test_a_commit_in_one_process_reaches_another_by_notification_and_its_next_compile(pg_url):
    watcher = Child("watch", pg_url)
    latencies = []
    try:
        assert watcher.expect() == "READY"

        async def write_and_watch() -> None:
            async with open_runtime(pg_url) as rt:
                writer = await rt.open_manager("writer", strategy=PassthroughStrategy())
                for n in range(40):
                    started = time.time()
                    message = await writer.add_message("user", [text(f"visible {n}")])
                    while True:  # skip news of the messages written for compiles
                        kind, message_id, when = (await trio.to_thread.run_sync(watcher.expect)).split()
                        if message_id == message.id:
                            break
                    assert kind == "HEARD"
                    latencies.append(float(when) - started)
                    if n % 10 == 0:
                        # right after the commit, before the watcher may have heard of it
                        await writer.add_message("user", [text(f"compiled {n}")])
                        watcher.send("compile")
                        while (line := await trio.to_thread.run_sync(watcher.expect)).startswith("HEARD"):
                            pass
                        assert line.startswith("C ") and f"compiled {n}" in json.loads(line[2:])

        trio.run(write_and_watch)
    finally:
        watcher.close()
    latencies.sort()
    # from the call to add_message to the other process's store hearing of the commit
    print(
        f"\ncommit to notification in another process, {len(latencies)} messages: median {statistics.median(latencies) * 1000:.1f} ms, "
        f"90th percentile {latencies[int(len(latencies) * 0.9)] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
    )


SHARED_COMPRESSORS = 3


def test_several_processes_compressing_one_namespace_keep_one_memory(pg_url):
    """Three processes compress the namespaces of ann and bob at once (each writes, compiles and
    drains them): the compression lease lets one process at a time compress a namespace, and the
    others take in its records, so every record of a namespace's memory is written once, the
    memory is whole (each chunk summarised once, no two chunks overlapping), and the stateful
    test's invariants hold."""
    children = [Child("work", pg_url, str(i), str(MESSAGES), "ann,bob") for i in range(SHARED_COMPRESSORS)]
    outputs = _outputs_until_done(children)
    found = rows(pg_url)
    check_sequences(found)
    for reader in ("ann", "bob"):
        prefix = f"agents/{reader}/autobiographical/"
        written: dict[str, list[str]] = {}
        for _id, _branch, _seq, kind, ref, body in found:
            if kind == "state" and ref.startswith(prefix):
                written.setdefault(ref, []).append(body)
        summaries = {k: json.loads(v[0]) for k, v in written.items() if k.startswith(prefix + "summary/")}
        chunks = {k: json.loads(v[0]) for k, v in written.items() if k.startswith(prefix + "chunk/")}
        assert summaries and chunks, f"the premise: {reader}'s namespace was compressed"
        twice = {key: bodies for key, bodies in written.items() if len(bodies) > 1}
        assert not twice, f"{len(twice)} records of {reader}'s memory were written twice: {sorted(twice)[:5]}"
        owners = [m for chunk in chunks.values() for m in ids_from_record(chunk)]
        assert len(owners) == len(set(owners)), f"{reader}: two chunks hold one message"
        level_one = [s["chunk"] for s in summaries.values() if s.get("level") == 1]
        assert len(level_one) == len(set(level_one)), f"{reader}: a chunk was summarised twice"
        leases = [ref for _i, _b, _s, kind, ref, _body in found if kind == "state" and ref.endswith("/compression-lease")]
        assert leases == [], f"{reader}: the lease is a session lock; no lease record enters the log"
        print(f"\n{reader}: {len(chunks)} chunks and {len(summaries)} summaries written once each")
    sequences, contents = _final_contents(outputs)
    assert len(sequences) == SHARED_COMPRESSORS * MESSAGES, "zero lost acknowledged writes"
    trio.run(_check_final_state, pg_url, sequences, contents)
