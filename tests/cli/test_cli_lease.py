"""``asides inspect`` and a namespace's compression lease. The lease is a session lock of a
shared store (actors/_lease.py), written nowhere: ``--json``'s ``compression_lease_holder`` is
the session that holds it now, read from the database's ``pg_locks``, or ``null``. Lease records
that earlier versions wrote into the log belong to their namespace and are ignored: never
reported as unknown or unreadable, and never taken for a holder."""

from __future__ import annotations

import json

from helpers import message_body, seed_records
from pg_checks import Child

from asides._cli import main


def _namespaces(capsys, path: str) -> dict[str, dict]:
    assert main(["inspect", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (branch,) = report["branches"]
    assert "compression-lease" not in json.dumps(branch["other_records"])
    return {ns["namespace"]: ns for ns in branch["namespaces"]}


def test_inspect_ignores_the_lease_records_of_earlier_versions(capsys, store_path):
    seed_records(
        store_path,
        [
            ("main", "message", None, message_body("user", [{"type": "text", "text": "hello"}])),
            ("main", "state", "agents/ann/reader", "ann"),
            ("main", "state", "agents/ann/compression-lease", {"holder": "4242-abcd", "seconds": 360, "branch": "main", "written_at": 1.0}),
            ("main", "state", "agents/bob/reader", "bob"),
            ("main", "state", "agents/bob/compression-lease", {"holder": None, "seconds": 0, "branch": "main", "written_at": 2.0}),
        ],
    )
    namespaces = _namespaces(capsys, store_path)
    assert namespaces["agents/ann"]["compression_lease_holder"] is None, "a record names nobody who holds it now"
    assert namespaces["agents/bob"]["compression_lease_holder"] is None
    assert all(ns["unreadable"] == [] for ns in namespaces.values())


def test_inspect_shows_the_process_holding_the_lease_and_nobody_once_it_was_killed(capsys, pg_url):
    child = Child("hold", pg_url)  # holds the lease of agents/s, its request never answered
    try:
        assert child.expect() == "HOLDING"
        holder = _namespaces(capsys, pg_url)["agents/s"]["compression_lease_holder"]
        assert holder.startswith("server process ") and f"'asides pid {child.process.pid}'" in holder, holder
    finally:
        child.kill()
    # kill -9: the server ends the child's session, and the lease with it, once it sees the socket close
    # (each look is one inspect; the server may take a moment to notice)
    looks = 0
    while _namespaces(capsys, pg_url)["agents/s"]["compression_lease_holder"] is not None:
        looks += 1
        assert looks < 100, "the killed process's session still holds the lease"
