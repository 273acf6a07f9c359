"""``asides inspect`` and a namespace's compression lease (written by processes sharing a
PostgreSQL store): the lease belongs to its namespace, shows its holder, and is never reported as
an unknown or unreadable record."""

from __future__ import annotations

import json

from helpers import message_body, seed_records

from asides._cli import main


def test_inspect_shows_the_lease_holder_of_a_namespace(capsys, store_path):
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
    assert main(["inspect", store_path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (branch,) = report["branches"]
    namespaces = {ns["namespace"]: ns for ns in branch["namespaces"]}
    assert namespaces["agents/ann"]["compression_lease_holder"] == "4242-abcd"
    assert namespaces["agents/bob"]["compression_lease_holder"] is None  # released
    assert all(ns["unreadable"] == [] for ns in namespaces.values())
    assert "compression-lease" not in json.dumps(branch["other_records"])
