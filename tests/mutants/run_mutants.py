#!/usr/bin/env python
"""Mutation run for the narrowing rules (SPEC N2-N6): does ``tests/actors/test_narrowing.py`` notice when
one check of ``actors/manager.py::ContextManager._check_narrowing`` or
``actors/namespace.py::NamespaceActor.raise_floor`` is taken out?

Not a pytest module (its name does not start with ``test_``); ``tests/package/test_mutants.py`` runs it
as a subprocess (marked slow). Run it directly with::

    .venv/bin/python tests/mutants/run_mutants.py [-j JOBS] [--every] [MUTANT_ID ...]

For each mutant it copies the repository (without ``.git`` and caches) to a temporary directory,
applies a one-line mutation by string replacement (failing loudly when the anchor text is not
found exactly once), runs ``pytest -x tests/actors/test_narrowing.py`` there (verbose, so a run that hangs
names its test; ``-x``: the first failing test kills the mutant, so the run stops there), and
reports the test that failed (``--every`` runs each to the end and lists every test that
kills it). The unmutated copy runs too, whole, and must pass. The exit status is non-zero when any
mutant survives (no test fails), when a run ends without a test failing for another reason (a
usage or collection error), when an anchor is missing, or when the baseline fails.

What makes it cheap (docs/testing.md, "The suite's time"):

* Each run is a pytest run of the whole file in its own process, as before, but that process is
  forked from this one, which has imported pytest, its plugins, Hypothesis and Trio once (never
  ``asides``: each fork imports the copy's ``asides``, and checks afterwards that it did). An
  interpreter started for each run spent most of its time on those imports.
* A mutant's ``first`` names the tests that killed it when measured (``--every``); they run first,
  then the rest of the file in its order. With ``-x`` a mutant's run is then usually its start
  and one test. Every test of the file still runs when those do not kill it, so the order decides
  the cost alone, never the verdict; a mutant killed by another test is reported, to update
  ``first``.
* The runs go ``-j`` at a time (default: one per core, at most 8), the baseline among them.

Which tests kill each mutant (every one, measured with ``--every``; "rowNN" is test_rowNN_...,
N1/N2 the two tests named after those rules):

  N3-floor                     rows 41-55 (every refusal after compression; row 44 at the floor's
                               boundary)
  N4-other-reader              row 59, N1 (by position)
  N4-no-reader                 row 59 (behaviourally the other-reader check refuses too; row 59
                               tells them apart by the reason it gives)
  N4-same-reader-elsewhere     row 60
  N4-unreadable-other-record   row 61 (all five records)
  N4-unreadable-floor          row 62 (all six records)
  N4-own-namespace-skipped     rows 44, 48, 56, 60, 61, 68
  N2-never-lowers              rows 41, 48, 49, 55, 56
  N5-persisted                 rows 41, 42, 44, 47-50, 53-59
  N3-in-memory                 rows 42, 44, 48, 49 (marking in initialize), 50-54 (measured
                               2026-12-02; row 41 no longer)
  N6-unreadable-floor-mark     row 62
  N2-no-reader-writes-nothing  N2 test, rows 54, 57 (their set-up needs a floor-free namespace)
  N5-loaded (extra: outside    rows 47 (reopen), 48 (fork, derive), 62
  the two functions)
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_FILE = "tests/actors/test_narrowing.py"
TIMEOUT = 240  # seconds per pytest run; the whole file normally takes a few
NAMESPACE = "actors/_namespace.py"  # the actor: the narrowing checks of an edit, the floor
#: What every run imports before the copy's own modules, imported once here before the forks: pytest
#: and the plugins it loads (their entry points), and the libraries asides and the tests use. A
#: module left out costs its import in each run, nothing else.
PRELOAD = (
    "pytest",
    "_pytest.assertion.rewrite",
    "_pytest.python",
    "_pytest.terminal",
    "pytest_trio.plugin",
    "pytest_timeout",
    "xdist.plugin",
    "xdist.looponfail",
    "anyio",
    "anyio.pytest_plugin",
    "_hypothesis_pytestplugin",
    "hypothesis",
    "hypothesis.strategies",
    "hypothesis.stateful",
    "trio",
    "trio.testing",
    "attrs",
    "sniffio",
    "sqlite3",
)
#: Exit status of a run whose ``asides`` was not the copy's (the mutation was not under test).
NOT_THE_COPY = 97


@dataclass(frozen=True)
class Mutant:
    id: str
    rule: str
    path: str
    anchor: str
    replacement: str
    #: Tests of TEST_FILE that killed this mutant when measured, run first: "row59" is
    #: test_row59_..., "n1" test_n1_... (each must name one test function of the file).
    first: tuple[str, ...]
    #: Further (path, anchor, replacement) edits, where the rule is kept in more than one place
    #: (a shared store re-checks a floor at commit, and actors follow records written elsewhere):
    #: the mutant takes out every place, or it would be an equivalent mutant.
    more: tuple[tuple[str, str, str], ...] = ()


MUTANTS = [
    Mutant(
        "N3-floor",
        "N3: refused once the message's sequence is at or below the floor",
        NAMESPACE,
        "        if stored.sequence <= floor:\n",
        "        if False:  # MUTANT N3-floor\n",
        first=("row41", "row44"),
    ),
    Mutant(
        "N4-other-reader",
        "N4: narrowing away from any other reader is always refused",
        NAMESPACE,
        "        if narrowing.hides_from_other_than(reader):\n",
        "        if False:  # MUTANT N4-other-reader\n",
        first=("row59", "n1"),
    ),
    Mutant(
        "N4-no-reader",
        "N4: any narrowing by a manager with no reader is refused (as such)",
        NAMESPACE,
        '            refuse(others, "a manager that compiles for no reader may not hide a block from anyone")\n',
        "            pass  # MUTANT N4-no-reader\n",
        first=("row59",),
    ),
    Mutant(
        "N4-same-reader-elsewhere",
        "N4: refused while another namespace on the branch records the same reader",
        NAMESPACE,
        "            if value == reader:\n",
        "            if False:  # MUTANT N4-same-reader-elsewhere\n",
        first=("row60",),
    ),
    Mutant(
        "N4-unreadable-other-record",
        "N4: refused while another namespace on the branch has an unreadable reader record",
        NAMESPACE,
        "            if not isinstance(value, str) or not value:\n",
        "            if False:  # MUTANT N4-unreadable-other-record\n",
        first=("row61",),
    ),
    Mutant(
        "N4-unreadable-floor",
        "N4: refused when the floor cannot be read",
        NAMESPACE,
        "        if not isinstance(floor, int):\n",
        "        if False:  # MUTANT N4-unreadable-floor\n",
        first=("row62",),
    ),
    Mutant(
        "N4-own-namespace-skipped",
        "N4: only *another* namespace's record refuses (the own record does not)",
        NAMESPACE,
        "            if namespace == self.namespace:\n",
        "            if False:  # MUTANT N4-own-namespace-skipped\n",
        first=("row44", "row60"),
    ),
    Mutant(
        "N2-never-lowers",
        "N2/N5: a lower mark keeps the higher floor (raise_floor)",
        NAMESPACE,
        "        if sequence <= current:\n",
        "        if False:  # MUTANT N2-never-lowers\n",
        more=(
            (
                NAMESPACE,
                "            if is_floor_record(stored) and stored >= sequence:\n                raise _Covered\n",
                "            pass  # MUTANT N2-never-lowers (the commit-time check)\n",
            ),
        ),
        first=("row41", "row55"),
    ),
    Mutant(
        "N5-persisted",
        "N5: the rise is written to the store, so it holds across reopen, fork and derive (raise_floor)",
        NAMESPACE,
        "            await self.store.set_state(self.branch, self.floor_key, sequence, guard=still_below)\n",
        "            pass  # MUTANT N5-persisted\n",
        first=("row41", "row47"),
    ),
    Mutant(
        "N3-in-memory",
        "N3/N5: the rise takes effect in the actor at once (raise_floor)",
        NAMESPACE,
        "            self._floor = sequence\n",
        "            pass  # MUTANT N3-in-memory\n",
        more=(
            (
                "actors/_core.py",
                "                        actor.store_changed()\n",
                "                        pass  # MUTANT N3-in-memory\n",
            ),
            (NAMESPACE, "                self.adopt_stored_records()\n                current = ", "                current = "),
        ),
        first=("row42", "row44"),
    ),
    Mutant(
        "N6-unreadable-floor-mark",
        "N6/N4: no compression read is recorded over an unreadable floor (raise_floor)",
        NAMESPACE,
        "        if not isinstance(current, int):\n",
        "        if False:  # MUTANT N6-unreadable-floor-mark\n",
        first=("row62",),
    ),
    Mutant(
        "N2-no-reader-writes-nothing",
        "N2: a manager with no reader writes no floor (raise_floor)",
        NAMESPACE,
        '        if reader is None:\n            return\n        self._require_turn("a floor raise")',
        '        if False:  # MUTANT N2-no-reader-writes-nothing\n            return\n        self._require_turn("a floor raise")',
        first=("n2_a_manager", "row54"),
    ),
    Mutant(
        "N5-loaded",
        "N5 (extra, NamespaceActor._load_floor): a new actor loads the stored floor",
        NAMESPACE,
        "        value = self.store.model.get_state(self.branch, self.floor_key)\n",
        "        value = MISSING  # MUTANT N5-loaded\n",
        first=("row47", "row48"),
    ),
]

IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    "*.egg-info",
    "*.db",
    "*.db-wal",
    "*.db-shm",
    ".ci",
)
FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)
SUMMARY = re.compile(r"^=*\s*(.*\d+ (?:passed|failed|error).*?)\s*=*$", re.MULTILINE)


def copy_repo(destination: Path) -> Path:
    # The copy is the package itself (the repository root is the ``asides`` package), so a
    # folder holding it as ``asides`` goes first on PYTHONPATH, ahead of the editable install.
    target = destination / "asides"
    shutil.copytree(ROOT, target, ignore=IGNORE)
    return target


def apply(repo: Path, mutant: Mutant) -> None:
    for relative, anchor, replacement in ((mutant.path, mutant.anchor, mutant.replacement), *mutant.more):
        path = repo / relative
        source = path.read_text()
        count = source.count(anchor)
        if count != 1:
            raise SystemExit(
                f"mutant {mutant.id}: anchor found {count} times in {relative} (expected exactly once); "
                f"the code changed, update the anchor:\n{anchor!r}"
            )
        path.write_text(source.replace(anchor, replacement))


class RunFirst:
    """A pytest plugin: the tests of TEST_FILE named by ``first`` run first (in file order), then
    the rest of the file. It changes the order alone, never what runs."""

    def __init__(self, first: tuple[str, ...]) -> None:
        self.prefixes = tuple(f"test_{name}_" for name in first)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.sort(key=lambda item: not getattr(item, "originalname", item.name).startswith(self.prefixes))


@dataclass
class Run:
    """One pytest run of TEST_FILE in a copy of the repository: the baseline (``mutant`` None) or
    a mutant's."""

    mutant: Mutant | None
    directory: tempfile.TemporaryDirectory[str]
    repo: Path
    output: Path
    pid: int = 0
    deadline: float = 0.0
    code: int = 0
    failed: tuple[str, ...] = ()
    summary: str = ""


def pytest_args(mutant: Mutant | None, every: bool) -> list[str]:
    # SQLite alone: the narrowing checks are the actors' and the same on both backends; the
    # PostgreSQL half would double every run (tests/conftest.py parametrises store_path). A mutant
    # is killed by its first failing test, so its run stops there (-x); the baseline runs whole.
    # -n0: the copy's pyproject.toml holds the suite's `-n 2`, which made every run start two
    # xdist workers, three interpreters importing everything for one file of quick tests.
    # The plugins were imported before the fork (PRELOAD), so pytest cannot rewrite the asserts in
    # their own code and says so once per plugin; the copy's tests and conftest are rewritten.
    quiet = ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]
    stop = ["-x"] if mutant is not None and not every else []
    return ["-n0", "-v", "-rfE", "-p", "no:cacheprovider", *quiet, "-k", "not postgres", *stop, TEST_FILE]


def run_in_child(run: Run, every: bool) -> NoReturn:
    """In the forked process: pytest on the copy, as ``python -m pytest`` there with the copy's
    parent on PYTHONPATH would run it; exits with pytest's status (NOT_THE_COPY when the modules
    under test were not the copy's)."""
    code = 3
    try:
        out = os.open(run.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        for name in [name for name in os.environ if name.startswith("PYTEST_")]:
            del os.environ[name]  # the outer run's (its xdist worker, its current test)
        os.chdir(run.repo)
        # `python -m pytest` puts the working directory first; PYTHONPATH the folder holding the
        # copy as `asides`, ahead of the editable install.
        sys.path[:0] = [str(run.repo), str(run.repo.parent)]
        sys.dont_write_bytecode = True
        plugins = [RunFirst(run.mutant.first)] if run.mutant is not None else []
        code = int(pytest.main(pytest_args(run.mutant, every), plugins=plugins))
        tested = sys.modules.get("asides.actors._namespace")
        where = getattr(tested, "__file__", None)
        if where is None or not Path(where).resolve().is_relative_to(run.repo.resolve()):
            print(f"\nthe run imported {where}, not the copy's modules; the mutant was not tested")
            code = NOT_THE_COPY
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def prepare(mutant: Mutant | None) -> Run:
    directory = tempfile.TemporaryDirectory(prefix="asides-mutant-")
    repo = copy_repo(Path(directory.name))
    if mutant is not None:
        apply(repo, mutant)
    return Run(mutant, directory, repo, Path(directory.name) / "pytest.out")


def start(run: Run, every: bool) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        run_in_child(run, every)
    run.pid = pid
    run.deadline = time.monotonic() + TIMEOUT


def finish(run: Run, status: int | None) -> None:
    """Read a run's result: its exit code (-1 when it hung past TIMEOUT and was killed), the tests
    that failed (the hung one counts as failing) and pytest's summary line."""
    output = run.output.read_text(errors="replace")
    if status is None:
        started = re.findall(r"^(tests/\S+::\S+)", output, re.MULTILINE)
        hung = started[-1] if started else "(unknown test)"
        run.code, run.failed, run.summary = -1, (f"{hung} (hung: no result within {TIMEOUT} s)",), f"timed out after {TIMEOUT} s"
    else:
        run.code = os.waitstatus_to_exitcode(status)
        run.failed = tuple(sorted(set(FAILED.findall(output))))
        summary = SUMMARY.findall(output)
        run.summary = (summary[-1] if summary else " ".join(output.strip().splitlines()[-3:])).strip("= ")
    run.directory.cleanup()


def run_all(mutants: list[Mutant], jobs: int, every: bool) -> tuple[Run, list[Run]]:
    """The baseline's run and every mutant's (in the order given), ``jobs`` at a time, each in a
    forked process."""
    loaded = sorted(name for name in sys.modules if name == "asides" or name.startswith("asides."))
    if loaded:
        raise SystemExit(f"asides is imported before the forks ({loaded[0]}): the runs would not test the copies")
    runs = [prepare(None), *(prepare(mutant) for mutant in mutants)]
    waiting = deque(runs)
    running: dict[int, Run] = {}
    while waiting or running:
        while waiting and len(running) < jobs:
            run = waiting.popleft()
            start(run, every)
            running[run.pid] = run
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            finish(running.pop(pid), status)
            continue
        now = time.monotonic()
        for run in [run for run in running.values() if run.deadline < now]:
            os.kill(run.pid, signal.SIGKILL)
            os.waitpid(run.pid, 0)
            del running[run.pid]
            finish(run, None)
        time.sleep(0.05)  # a supervisor's poll of its children, not a wait for something to happen
    return runs[0], runs[1:]


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # not installed: each run imports what it needs itself


def killed(run: Run) -> bool:
    """A test of the file failed (pytest's status 1, or a test hung): not a run that ended on a
    usage or collection error, nor one that tested other modules than the copy's."""
    return run.code in (pytest.ExitCode.TESTS_FAILED, -1) and bool(run.failed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutant ids to run (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--every", action="store_true", help="run each mutant's tests to the end, listing every test that kills it")
    args = parser.parse_args(argv)
    if not hasattr(os, "fork"):
        raise SystemExit("the mutation run forks a process per run (POSIX): this platform has no os.fork")
    chosen = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    unknown = set(args.ids) - {m.id for m in MUTANTS}
    if unknown:
        raise SystemExit(f"unknown mutant ids: {sorted(unknown)}")
    # Every anchor, and every test named first, is checked before anything runs, so a stale one
    # fails at once.
    tests = re.findall(r"^(?:async )?def (test_\w+)", (ROOT / TEST_FILE).read_text(), re.MULTILINE)
    for mutant in chosen:
        count = (ROOT / mutant.path).read_text().count(mutant.anchor)
        if count != 1:
            raise SystemExit(f"mutant {mutant.id}: anchor found {count} times in {mutant.path} (expected exactly once)")
        for name in mutant.first:
            named = [test for test in tests if test.startswith(f"test_{name}_")]
            if len(named) != 1:
                raise SystemExit(f"mutant {mutant.id}: first names {name!r}, matching {len(named)} tests of {TEST_FILE} (expected one)")

    preload()
    baseline, runs = run_all(chosen, max(1, args.jobs), args.every)
    print(f"baseline (no mutation): {baseline.summary}")
    if baseline.code != 0:
        print("the unmutated tests fail; fix them first:\n  " + "\n  ".join(baseline.failed), file=sys.stderr)
        return 2

    survivors = []
    for run in runs:
        mutant = run.mutant
        assert mutant is not None
        status = "killed" if killed(run) else "SURVIVED" if run.code == 0 else f"NOT KILLED (pytest exit status {run.code})"
        print(f"\n[{status}] {mutant.id}: {mutant.rule}\n  {mutant.path}: {mutant.anchor.splitlines()[0].strip()}\n  {run.summary}")
        for name in run.failed:
            print(f"    failed: {name}")
        expected = tuple(f"tests/actors/test_narrowing.py::test_{name}_" for name in mutant.first)
        if killed(run) and not any(name.startswith(expected) for name in run.failed):
            print(f"    (none of its first tests {', '.join(mutant.first)} killed it: update its first)")
        if not killed(run):
            survivors.append(mutant.id)
    print(f"\n{len(runs) - len(survivors)} of {len(runs)} mutants killed")
    if survivors:
        print("mutants not killed: " + ", ".join(survivors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
