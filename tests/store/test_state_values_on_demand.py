"""An open leaves state records in the database: it counts them a block of sequences, a
record's key and versions are read when a read needs them and its value when it is read, so an
open that does not read a namespace's records never pays for them; a value written here stays
decoded until it is committed, then among the newest read or written, as one read back. What a reader gets is what
was written, on every branch, and an erasure finds and blanks the values derived from what it
erases though none of them is held."""

from __future__ import annotations

import sqlite3

import pytest

from asides import PassthroughStrategy, open_runtime, text
from asides.lowlevel import open_store
from asides.store._model import UNREADABLE


def summary(number: int, source: str) -> dict[str, object]:
    return {"text": f"memory {number} " + "of a long stretch " * 40, "message_ids": [source], "n": number}


async def write_states(path: str, count: int) -> list[str]:
    """``count`` records under ``agents/a/mem/`` (each naming one message as its source) and as
    many under ``agents/b/mem/``, in batches."""
    async with open_store(path) as store:
        messages = await store.append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(count)])
        ids = [m.id for m in messages]
        for first in range(0, count, 500):
            batch = range(first, min(count, first + 500))
            await store.set_states("main", {f"agents/a/mem/{i:05}": summary(i, ids[i]) for i in batch})
            await store.set_states("main", {f"agents/b/mem/{i:05}": summary(-i, ids[i]) for i in batch})
        return ids


@pytest.mark.parametrize("count", [300, 3_000])
async def test_an_open_reads_no_state_value_and_a_read_reads_what_it_asks_for(store_path: str, count: int) -> None:
    await write_states(store_path, count)
    async with open_store(store_path, read_only=True) as store:
        opened = store.statistics()
        assert opened.state_values_read == 0 and opened.state_versions_read == 0, "the open read places, no key, no value"
        assert store.get_state("main", "agents/a/mem/00002")["n"] == 2
        assert store.statistics().state_versions_read == 1, "a read reads the versions of its key"
        assert store.get_state("main", "agents/a/mem/none") is None and store.get_state("main", "agents/a/mem/none") is None
        assert store.statistics().state_versions_read == 1
        read = store.statistics().state_values_read
        assert store.get_state("main", "agents/a/mem/00007")["n"] == 7
        assert store.statistics().state_values_read == read + 1
        assert store.get_state("main", "agents/a/mem/00007")["n"] == 7
        assert store.statistics().state_values_read == read + 1, "a value read back stays decoded"
        read = store.statistics().state_values_read
        items = store.state_items("main", "agents/b/")
        assert sorted(items) == [f"agents/b/mem/{i:05}" for i in range(count)]
        assert all(value["n"] == -int(key[-5:]) for key, value in items.items())
        assert store.statistics().state_values_read - read <= count, "namespace b's values alone, each once"
        versions = store.statistics().state_versions_read
        assert count <= versions <= 2 + count, ("namespace b's keys alone, and the two read before", versions)


async def test_values_read_back_are_the_values_written_and_stay_bounded(store_path: str) -> None:
    ids = await write_states(store_path, 1_500)
    async with open_store(store_path) as store:
        written = {f"agents/a/mem/{i:05}": summary(i, ids[i]) for i in range(1_500)}
        assert store.state_items("main", "agents/a/") == written
        read = store.statistics().state_values_read
        for key in written:  # one at a time: more values than stay decoded
            assert store.get_state("main", key) == written[key]
        assert store.get_state("main", "agents/a/mem/00000") == written["agents/a/mem/00000"]
        assert store.statistics().state_values_read > read + 1_500, "the oldest read went, and was read again"
        await store.set_states("main", {"agents/a/mem/00003": {"text": "written again"}})
        assert store.get_state("main", "agents/a/mem/00003") == {"text": "written again"}
    async with open_store(store_path, read_only=True) as store:
        assert store.get_state("main", "agents/a/mem/00003") == {"text": "written again"}
        assert store.get_state("main", "agents/a/mem/00004") == written["agents/a/mem/00004"]


async def test_values_written_here_stay_until_committed_then_as_many_as_the_cache_holds(store_path: str) -> None:
    async with open_store(store_path) as store:
        message = await store.append_message("main", "user", (text("m"),))
        seen: list[object] = []
        # A listener hears of a write once it is in memory, before its commit: the value reads as written.
        store.add_listener(lambda _event: seen.append(store.get_state("main", "agents/a/mem/02999")))
        for first in range(0, 3_000, 500):
            await store.set_states("main", {f"agents/a/mem/{i:05}": summary(i, message.id) for i in range(first, first + 500)})
        assert seen[-1] == summary(2_999, message.id)
        assert store.statistics().state_values_in_memory <= 1_024, "no more stay decoded than the cache holds"
        read = store.statistics().state_values_read
        assert store.get_state("main", "agents/a/mem/00001") == summary(1, message.id)
        assert store.statistics().state_values_read == read + 1, "an old value, read back"
        assert store.get_state("main", "agents/a/mem/02998") == summary(2_998, message.id)
        assert store.statistics().state_values_read == read + 1, "a value written last, still decoded"
        large = {f"agents/a/large/{i:03}": {"text": "x" * 20_000} for i in range(200)}  # 4,000,000 characters
        await store.set_states("main", large)
        assert store.statistics().state_values_in_memory <= 50, "the cache holds values of 1,000,000 characters together"
        assert store.get_state("main", "agents/a/large/000") == large["agents/a/large/000"]


async def test_an_erasure_after_the_open_blanks_the_values_derived_from_it(store_path: str) -> None:
    ids = await write_states(store_path, 1_200)
    async with open_store(store_path) as store:
        before = store.get_state("main", "agents/a/mem/00011")  # one held decoded, the rest in the database
        assert before is not None
        erasure = await store.erase([ids[11], ids[900]], reason="asked", at=1.0)
        assert erasure is not None
        assert erasure.records_invalidated == 4, "a's and b's record of each message"
        for key in ("agents/a/mem/00011", "agents/b/mem/00011", "agents/a/mem/00900", "agents/b/mem/00900"):
            assert store.get_state("main", key) is None
        assert store.get_state("main", "agents/a/mem/00012")["n"] == 12
    async with open_store(store_path, read_only=True) as store:
        assert store.get_state("main", "agents/a/mem/00900") is None
        assert store.get_state("main", "agents/b/mem/00011") is None
        assert "memory 900 " not in repr(store.state_items("main", "agents/"))


async def test_a_runtime_opens_without_reading_the_values_of_namespaces_it_does_not_open(store_path: str) -> None:
    await write_states(store_path, 2_000)
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/c", strategy=PassthroughStrategy())
        await manager.add_message("user", [text("hello")])
        await manager.compile(max_tokens=10_000)
        stats = rt.store.statistics()
        assert stats.state_values_read <= 10, "its own few records, never a's or b's 4,000"
        assert stats.state_versions_read <= 10, "nor their keys"


async def test_a_state_body_changed_outside_asides_reads_as_unreadable_when_read(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "store.db")
    async with open_store(path) as store:
        await store.set_states("main", {"agents/a/mem/1": {"n": 1}, "agents/a/mem/2": {"n": 2}, "agents/a/mem/3": {"n": 3}})
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE log SET body = '{\"n\": 1, \"n\": 3}' WHERE kind = 'state' AND ref = 'agents/a/mem/1'")
        connection.execute("UPDATE log SET body = 'not json' WHERE kind = 'state' AND ref = 'agents/a/mem/2'")
        connection.execute("UPDATE log SET body = '{\"n\": [{\"a\": 1, \"a\": 2}]}' WHERE kind = 'state' AND ref = 'agents/a/mem/3'")
    async with open_store(path, read_only=True) as store:
        assert store.get_state("main", "agents/a/mem/1") is UNREADABLE
        assert store.get_state("main", "agents/a/mem/2") is UNREADABLE
        assert store.get_state("main", "agents/a/mem/3") is UNREADABLE, "a key given twice deep inside"
    assert "gives a key twice" in caplog.text and "is not JSON" in caplog.text


async def test_the_keys_whose_values_may_hold_words_include_every_one_that_does(store_path: str) -> None:
    """A superset, narrowed in the database by the ASCII words: whatever the case, the escapes
    JSON adds, and the characters whose case-folding gives ASCII letters (``ſ``, the Kelvin
    sign, ``ß``, ``İ``)."""
    import random

    from asides.store._search import query_words, words

    rng = random.Random(33)
    alphabet = list("abcdeskABCDESK019") + ["ſ", "\u212a", "ß", "İ", "é", " ", " ", "\n", '"', "\\", "-", "_"]
    texts = {f"agents/a/mem/{i:04}": {"text": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))} for i in range(400)}
    async with open_store(store_path) as store:
        await store.set_states("main", texts)
    def word() -> str:
        return "".join(rng.choice("abcdesk019") for _ in range(rng.randint(1, 3)))

    queries = [" ".join(word() for _ in range(rng.randint(1, 2))) for _ in range(150)]
    queries += ["ss", "k", "s", "i", "é", "ß"]
    narrowed = 0
    async with open_store(store_path, read_only=True) as store:
        for query in queries:
            wanted = query_words(query)
            holding = {key for key, value in texts.items() if set(wanted) <= set(words(value["text"]))}
            found = store.state_keys_holding("main", list(texts), wanted)
            assert holding <= set(found), (query, holding - set(found))
            assert found == [key for key in texts if key in set(found)], "in the order asked"
            narrowed += len(found) < len(texts)
        assert store.statistics().state_values_read == 0, "no value read into memory"
        assert store.state_keys_holding("main", ["agents/a/none", "agents/a/mem/0001"], ["zzz"]) in ([], ["agents/a/mem/0001"])
    assert narrowed > 100, "the database narrows most searches"


async def test_each_branch_reads_the_versions_it_sees_after_a_reopen(store_path: str) -> None:
    async with open_store(store_path) as store:
        await store.set_states("main", {"agents/a/k": {"v": "main 1"}, "agents/a/only-main": 1})
        head = store.head("main")
        await store.create_branch("child", "main")
        await store.set_states("main", {"agents/a/k": {"v": "main 2"}})
        await store.set_states("child", {"agents/a/k": {"v": "child 1"}, "agents/a/only-child": 2})
        await store.create_branch("grandchild", "child")
        written = {b: store.state_items(b, "agents/") for b in ("main", "child", "grandchild")}
    assert written["child"]["agents/a/k"] == {"v": "child 1"} and "agents/a/only-child" not in written["main"]
    async with open_store(store_path, read_only=True) as store:
        assert store.get_state("grandchild", "agents/a/k") == {"v": "child 1"}, "a key read first through a grandchild"
        assert {b: store.state_items(b, "agents/") for b in ("main", "child", "grandchild")} == written
        assert store.state_keys("grandchild", "agents/a/only") == ["agents/a/only-child", "agents/a/only-main"]
    async with open_store(store_path) as store:
        assert store.get_state("child", "agents/a/only-main") == 1, "inherited from before the fork"
        await store.set_states("child", {"agents/a/k": {"v": "child 2"}})  # a key not read yet, written
        assert store.get_state("child", "agents/a/k") == {"v": "child 2"}
        assert store.get_state("main", "agents/a/k") == {"v": "main 2"}
        assert store.get_state("main", "agents/a/k") is not None and head < store.head("main")


async def test_an_erasure_blanks_a_record_whose_key_no_read_reached(store_path: str) -> None:
    ids = await write_states(store_path, 600)
    async with open_store(store_path) as store:
        erasure = await store.erase([ids[5]], reason="asked", at=1.0)
        assert erasure is not None and erasure.records_invalidated == 2
        assert store.statistics().state_versions_read <= 4, "the erasure streamed the records, it read no key's versions"
        assert store.get_state("main", "agents/b/mem/00005") is None
    async with open_store(store_path, read_only=True) as store:
        assert store.get_state("main", "agents/a/mem/00005") is None
        assert store.get_state("main", "agents/a/mem/00006")["n"] == 6
