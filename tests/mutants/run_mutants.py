#!/usr/bin/env python
"""Mutation run for the narrowing rules (SPEC N2-N6): does ``tests/test_narrowing.py`` notice when
one check of ``actors/manager.py::ContextManager._check_narrowing`` or
``actors/namespace.py::NamespaceActor.raise_floor`` is taken out?

Not a pytest module (its name does not start with ``test_``); ``tests/test_mutants.py`` runs it
as a subprocess (marked slow). Run it directly with::

    /work/venv/bin/python tests/mutants/run_mutants.py [-j JOBS] [--every] [MUTANT_ID ...]

For each mutant it copies the repository (without ``.git`` and caches) to a temporary directory,
applies a one-line mutation by string replacement (failing loudly when the anchor text is not
found exactly once), runs ``pytest -x tests/test_narrowing.py`` there (verbose, so a run that hangs
names its test; ``-x``: the first failing test kills the mutant, so the run stops there), and
reports the test that failed (``--every`` runs each to the end and lists every test that
kills it, as the table below was measured). The unmutated copy runs first and must pass. The exit status is non-zero when any mutant
survives (no test fails), when an anchor is missing, or when the baseline fails.

Which tests cover which rule (the tests of tests/test_narrowing.py that kill each mutant, as
measured; "rowNN" is test_rowNN_..., N1/N2 the two tests named after those rules):

  N3-floor                     N3: refused at or below the floor       rows 41-55 (every refusal
                                                                        after compression; row 44 at
                                                                        the floor's boundary)
  N4-other-reader              N4: away from any other reader          row 59, N1 (by position)
  N4-no-reader                 N4: by a manager with no reader         row 59 (behaviourally the
                                                                        other-reader check refuses
                                                                        too; row 59 tells them apart
                                                                        by the reason it gives)
  N4-same-reader-elsewhere     N4: another namespace records ann       row 60
  N4-unreadable-other-record   N4: another namespace's record broken   row 61 (all five records)
  N4-unreadable-floor          N4: the floor cannot be read            row 62 (all six records)
  N4-own-namespace-skipped     N4: only *other* namespaces count       rows 44, 48, 56, 60, 61, 68
  N2-never-lowers              N2/N5: a lower mark keeps the floor     rows 41, 48, 49, 55, 56
  N5-persisted                 N5: the rise is stored (reopen, fork,   rows 41, 42, 44, 47-50,
                               derive see it)                           53-59
  N3-in-memory                 N3/N5: the rise counts at once          rows 41-56
  N6-unreadable-floor-mark     N6: no read recorded over a broken      row 62
                               floor (FloorUnavailableError)
  N2-no-reader-writes-nothing  N2: a manager with no reader writes     N2 test, rows 54, 57 (their
                               no floor                                 set-up needs a floor-free
                                                                        namespace)
  N5-loaded (extra: outside    N5: a new actor loads the stored floor  rows 47 (reopen), 48 (fork,
  the two functions)                                                    derive), 62
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_FILE = "tests/test_narrowing.py"
TIMEOUT = 240  # seconds per pytest run; the whole file normally takes a few
MANAGER = "actors/_editing.py"  # the narrowing checks of ContextManager.edit_message
NAMESPACE = "actors/_namespace.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    rule: str
    path: str
    anchor: str
    replacement: str
    #: Further (path, anchor, replacement) edits, where the rule is kept in more than one place
    #: (a shared store re-checks a floor at commit, and actors follow records written elsewhere):
    #: the mutant takes out every place, or it would be an equivalent mutant.
    more: tuple[tuple[str, str, str], ...] = ()


MUTANTS = [
    Mutant(
        "N3-floor",
        "N3: refused once the message's sequence is at or below the floor",
        MANAGER,
        "        if stored.sequence <= floor:\n",
        "        if False:  # MUTANT N3-floor\n",
    ),
    Mutant(
        "N4-other-reader",
        "N4: narrowing away from any other reader is always refused",
        MANAGER,
        "        if narrowing.hides_from_other_than(reader):\n",
        "        if False:  # MUTANT N4-other-reader\n",
    ),
    Mutant(
        "N4-no-reader",
        "N4: any narrowing by a manager with no reader is refused (as such)",
        MANAGER,
        '            refuse(others, "a manager that compiles for no reader may not hide a block from anyone")\n',
        "            pass  # MUTANT N4-no-reader\n",
    ),
    Mutant(
        "N4-same-reader-elsewhere",
        "N4: refused while another namespace on the branch records the same reader",
        MANAGER,
        "            if value == reader:\n",
        "            if False:  # MUTANT N4-same-reader-elsewhere\n",
    ),
    Mutant(
        "N4-unreadable-other-record",
        "N4: refused while another namespace on the branch has an unreadable reader record",
        MANAGER,
        "            if not isinstance(value, str) or not value:\n",
        "            if False:  # MUTANT N4-unreadable-other-record\n",
    ),
    Mutant(
        "N4-unreadable-floor",
        "N4: refused when the floor cannot be read",
        MANAGER,
        "        if not isinstance(floor, int):\n",
        "        if False:  # MUTANT N4-unreadable-floor\n",
    ),
    Mutant(
        "N4-own-namespace-skipped",
        "N4: only *another* namespace's record refuses (the own record does not)",
        MANAGER,
        "            if namespace == self._namespace:\n",
        "            if False:  # MUTANT N4-own-namespace-skipped\n",
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
                "            if isinstance(stored, int) and not isinstance(stored, bool) and stored >= sequence:\n"
                "                raise _Covered\n",
                "            pass  # MUTANT N2-never-lowers (the commit-time check)\n",
            ),
        ),
    ),
    Mutant(
        "N5-persisted",
        "N5: the rise is written to the store, so it holds across reopen, fork and derive (raise_floor)",
        NAMESPACE,
        "            await self.store.set_state(self.branch, self.floor_key, sequence, guard=still_below)\n",
        "            pass  # MUTANT N5-persisted\n",
    ),
    Mutant(
        "N3-in-memory",
        "N3/N5: the rise takes effect in the actor at once (raise_floor)",
        NAMESPACE,
        "            self._floor = sequence\n",
        "            pass  # MUTANT N3-in-memory\n",
        more=(
            (
                "actors/_runtime.py",
                "                    actor.adopt_stored_records()\n",
                "                    pass  # MUTANT N3-in-memory\n",
            ),
            (MANAGER, "                self._actor.adopt_stored_records()\n", "                pass  # MUTANT N3-in-memory\n"),
        ),
    ),
    Mutant(
        "N6-unreadable-floor-mark",
        "N6/N4: no compression read is recorded over an unreadable floor (raise_floor)",
        NAMESPACE,
        "        if not isinstance(current, int):\n",
        "        if False:  # MUTANT N6-unreadable-floor-mark\n",
    ),
    Mutant(
        "N2-no-reader-writes-nothing",
        "N2: a manager with no reader writes no floor (raise_floor)",
        NAMESPACE,
        '        if reader is None:\n            return\n        self._require_turn("a floor raise")',
        '        if False:  # MUTANT N2-no-reader-writes-nothing\n            return\n        self._require_turn("a floor raise")',
    ),
    Mutant(
        "N5-loaded",
        "N5 (extra, NamespaceActor._load_floor): a new actor loads the stored floor",
        NAMESPACE,
        "        value = self.store.model.get_state(self.branch, self.floor_key)\n",
        "        value = MISSING  # MUTANT N5-loaded\n",
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


def run_tests(repo: Path, *, first_failure: bool = False) -> tuple[int, list[str], str]:
    """Run the narrowing tests in ``repo``: (exit code, failed test ids, summary line). A run that
    hangs past ``TIMEOUT`` counts as failing, in the test that was running. With
    ``first_failure`` the run stops at its first failing test (a mutant needs one to be killed)."""
    stop = ["-x"] if first_failure else []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(repo.parent))
    env.pop("PYTEST_ADDOPTS", None)
    # SQLite alone: the narrowing checks are the actors' and the same on both backends; the
    # PostgreSQL half would double every run (tests/conftest.py parametrises store_path). A mutant
    # is killed by its first failing test, so its run stops there (-x); the baseline runs whole.
    # -n0: the copy's pyproject.toml holds the suite's `-n 2`, which made every run start two
    # xdist workers, three interpreters importing everything for one file of quick tests.
    command = [sys.executable, "-m", "pytest", "-n0", "-v", "-rfE", "-p", "no:cacheprovider", "-k", "not postgres", *stop, TEST_FILE]
    try:
        proc = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        started = re.findall(r"^(tests/\S+::\S+)", partial, re.MULTILINE)
        hung = started[-1] if started else "(unknown test)"
        return -1, [f"{hung} (hung: no result within {TIMEOUT} s)"], f"timed out after {TIMEOUT} s"
    output = proc.stdout + proc.stderr
    failed = sorted(set(FAILED.findall(output)))
    summary = SUMMARY.findall(output)
    return proc.returncode, failed, (summary[-1] if summary else " ".join(output.strip().splitlines()[-1:])).strip("= ")


def check_imports_copy(repo: Path) -> None:
    """The copy's modules, not the editable install's, must be the ones imported."""
    out = subprocess.run(
        [sys.executable, "-c", "import asides.actors._manager as m; print(m.__file__)"],
        cwd=repo,
        env=dict(os.environ, PYTHONPATH=str(repo.parent)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(out).resolve().is_relative_to(repo.resolve()):
        raise SystemExit(f"the copy at {repo} imports {out}, not its own modules; the mutants would test nothing")


def run_one(mutant: Mutant | None, every: bool = False) -> tuple[Mutant | None, int, list[str], str]:
    with tempfile.TemporaryDirectory(prefix="asides-mutant-") as directory:
        repo = copy_repo(Path(directory))
        if mutant is None:
            check_imports_copy(repo)
        else:
            apply(repo, mutant)
        code, failed, summary = run_tests(repo, first_failure=mutant is not None and not every)
        return mutant, code, failed, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutant ids to run (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--every", action="store_true", help="run each mutant's tests to the end, listing every test that kills it")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    unknown = set(args.ids) - {m.id for m in MUTANTS}
    if unknown:
        raise SystemExit(f"unknown mutant ids: {sorted(unknown)}")
    # Every anchor is checked before anything runs, so a stale anchor fails at once.
    for mutant in chosen:
        count = (ROOT / mutant.path).read_text().count(mutant.anchor)
        if count != 1:
            raise SystemExit(f"mutant {mutant.id}: anchor found {count} times in {mutant.path} (expected exactly once)")

    _, code, failed, summary = run_one(None)
    print(f"baseline (no mutation): {summary}")
    if code != 0:
        print("the unmutated tests fail; fix them first:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 2

    survivors = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for mutant, code, failed, summary in pool.map(lambda m: run_one(m, args.every), chosen):
            assert mutant is not None
            killed = code != 0 and bool(failed)
            status = "killed" if killed else "SURVIVED"
            print(f"\n[{status}] {mutant.id}: {mutant.rule}\n  {mutant.path}: {mutant.anchor.splitlines()[0].strip()}\n  {summary}")
            for name in failed:
                print(f"    failed: {name}")
            if not killed:
                survivors.append(mutant.id)
    print(f"\n{len(chosen) - len(survivors)} of {len(chosen)} mutants killed")
    if survivors:
        print("surviving mutants: " + ", ".join(survivors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
