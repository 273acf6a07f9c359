"""The examples run as a user runs them: a subprocess from the repository root.

SPEC A1, A2, A5 and 3.3.1 (no compiled block has an audience), through ``examples/two_readers.py``
(the seed's Problem scenario, fixed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, os.path.join("examples", script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _line(lines: list[str], prefix: str) -> str:
    (found,) = [line for line in lines if line.startswith(prefix)]
    return found


def test_two_readers_example():
    """``python examples/two_readers.py`` exits 0; ann's compile holds ``[for ann]`` and the
    shared block but not ``[for bob]``, bob's the reverse, neither compile has a block with an
    audience, and the stored message keeps all three blocks with their audiences (A5)."""
    result = _run("two_readers.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()

    ann = _line(lines, "ann's compile: ")
    assert "[for ann]" in ann and "Hello, both." in ann and "[for bob]" not in ann
    assert ann.endswith("any block with an audience: False")

    bob = _line(lines, "bob's compile: ")
    assert "[for bob]" in bob and "Hello, both." in bob and "[for ann]" not in bob
    assert bob.endswith("any block with an audience: False")

    stored = _line(lines, "stored message (get_all_messages): ")
    blocks = json.loads(stored.split(": ", 1)[1])
    assert blocks == [
        {"type": "text", "text": "[for ann]", "audience": ["ann"]},
        {"type": "text", "text": "[for bob]", "audience": ["bob"]},
        {"type": "text", "text": "Hello, both."},
    ]
