"""The narrowing tests notice each narrowing check taken out (SPEC N2-N6).

Runs ``tests/mutants/run_mutants.py`` as a subprocess: every mutant of
``ContextManager._check_narrowing`` and ``NamespaceActor.raise_floor`` it lists must make at least
one test of ``tests/actors/test_narrowing.py`` fail. It copies the repository once per mutant and runs
that file there, each run a process forked from one that imported pytest and its plugins once,
with the tests that killed the mutant before run first (docs/testing.md, "The suite's time"):
about half a minute of CPU in all, marked ``slow``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "mutants" / "run_mutants.py"


@pytest.mark.slow
@pytest.mark.timeout(900)  # one run of tests/actors/test_narrowing.py per mutant: past the default 120 s under load
def test_every_narrowing_mutant_is_killed():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=SCRIPT.parents[2],
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    assert "SURVIVED" not in report
    assert "mutants killed" in report
