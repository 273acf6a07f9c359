"""The write-ahead log of a store file stays bounded while a host writes, in small commits or in
large batches (SQLite only).

Under Trio with ``synchronous=NORMAL`` small commits run on the event loop's thread on a
connection that never checkpoints by itself; the store's driver checkpoints for it, in its
worker thread. Without that the ``-wal`` file would grow by every commit for the life of the
process.
"""

from __future__ import annotations

import os

from asides.lowlevel import open_store
from asides.store import text
from asides.store._drivers import CHECKPOINT_ROWS

COMMITS = 3 * CHECKPOINT_ROWS  # a commit of one message writes one row


async def test_the_wal_file_stays_bounded_over_thousands_of_small_commits(tmp_path):
    path = str(tmp_path / "s.db")
    async with open_store(path) as store:
        for n in range(COMMITS):
            await store.append_message("main", "user", (text(f"message {n} " + "x" * 300),))
        wal_bytes = os.path.getsize(path + "-wal")
        assert len(store.messages("main")) == COMMITS
    frames = wal_bytes // 4096
    # Every commit adds its log page and its index's page (where each message stands) to the
    # write-ahead log; without checkpoints COMMITS commits would leave at least 2 * COMMITS
    # frames. A checkpoint every CHECKPOINT_ROWS rows (commits) lets the log start again from its
    # beginning, so it holds what about that many commits wrote.
    assert frames < 3 * CHECKPOINT_ROWS < 2 * COMMITS, f"the -wal file holds {frames} pages after {COMMITS} commits"


async def test_the_wal_file_stays_bounded_over_large_batches(tmp_path):
    # Batched appends run in the worker thread, not inline: they are checkpointed by the rows
    # they write. Twelve batches of half CHECKPOINT_ROWS rows of 1 KB write some 12 MB.
    path = str(tmp_path / "s.db")
    batch = CHECKPOINT_ROWS // 2
    async with open_store(path) as store:
        for b in range(12):
            await store.append_messages("main", [("user", (text(f"{b}.{n} " + "x" * 1000),), None) for n in range(batch)])
        wal_bytes = os.path.getsize(path + "-wal")
        db_bytes = os.path.getsize(path)
        assert store.length("main") == 12 * batch
    # Without a checkpoint every page written stays in the -wal file and the database file
    # keeps its first page alone; with one after every CHECKPOINT_ROWS rows the log holds what
    # about three batches wrote.
    assert db_bytes > 6 * batch * 1000, f"the database file holds {db_bytes} bytes: nothing was checkpointed"
    assert wal_bytes < 4 * batch * 1400, f"the -wal file holds {wal_bytes} bytes after {12 * batch} rows"


async def test_commits_after_a_checkpoint_are_all_there_on_reopen(tmp_path):
    path = str(tmp_path / "s.db")
    async with open_store(path) as store:
        for n in range(1200):
            await store.append_message("main", "user", (text(f"message {n}"),))
    async with open_store(path) as store:
        assert [m.sequence for m in store.messages("main")] == list(range(1, 1201))
