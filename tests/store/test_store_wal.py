"""The write-ahead log of a store file stays bounded while a host writes (SQLite only).

Under Trio with ``synchronous=NORMAL`` small commits run on the event loop's thread on a
connection that never checkpoints by itself; the store's driver checkpoints for it, in its
worker thread. Without that the ``-wal`` file would grow by every commit for the life of the
process.
"""

from __future__ import annotations

import os

from asides.lowlevel import open_store
from asides.store import text
from asides.store._drivers import CHECKPOINT_EVERY

COMMITS = 3 * CHECKPOINT_EVERY


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
    # frames. A checkpoint every CHECKPOINT_EVERY commits lets the log start again from its
    # beginning, so it holds what about that many commits wrote.
    assert frames < 3 * CHECKPOINT_EVERY < 2 * COMMITS, f"the -wal file holds {frames} pages after {COMMITS} commits"


async def test_commits_after_a_checkpoint_are_all_there_on_reopen(tmp_path):
    path = str(tmp_path / "s.db")
    async with open_store(path) as store:
        for n in range(1200):
            await store.append_message("main", "user", (text(f"message {n}"),))
    async with open_store(path) as store:
        assert [m.sequence for m in store.messages("main")] == list(range(1, 1201))
