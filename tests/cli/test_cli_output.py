"""What the command prints and the codes it exits with: ``--version``, ``inspect`` in a narrow
terminal and into a pipe (folded, never cut), and a closed output pipe (quiet)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import trio
from test_cli import ROOT, built, run  # noqa: F401  (built is a fixture)

import asides
from asides import PassthroughStrategy, WindowedPassthroughStrategy, open_runtime, text

LONG_NAMESPACE = "agents/planning-committee/venue-and-logistics-coordinator"
LONG_READER = "venue-and-logistics-coordinator-ann"
BRANCH_HEADERS = ["branch", "parent", "fork point", "head", "messages", "with audience"]
NAMESPACE_HEADERS = ["namespace", "reader", "floor", "strategy", "sees", "memories"]


def asides_process(*argv: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "asides", *argv], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


def test_version(capsys):
    code, out, _err = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"asides {asides.__version__}"
    result = asides_process("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"asides {asides.__version__}"


@pytest.fixture
def long_names(tmp_path) -> str:
    path = str(tmp_path / "long.db")

    async def build() -> None:
        async with open_runtime(path) as rt:
            owner = await rt.open_manager(LONG_NAMESPACE, strategy=PassthroughStrategy(), view_reader=LONG_READER)
            await owner.add_message("user", [text("hello"), text("for the coordinator", [LONG_READER])])
            host = await rt.open_manager("host", strategy=WindowedPassthroughStrategy())
            await host.compile(max_tokens=50, reserve_for_response=0)
            await host.fork("a-branch-with-a-rather-long-name-too")

    trio.run(build)
    return path


def _is_rule(line: str) -> bool:
    return bool(line.strip()) and set(line.strip()) <= {"━", "─", " "}


def column_text(table: str, column: int, *, header: bool = False) -> str:
    """The text of one column of a rich SIMPLE_HEAD table (its body, or its header), its lines
    joined: a folded cell goes on on the next line. Columns are the runs of positions that are
    not blank on every line of the table."""
    lines = table.splitlines()[1:]  # under the title
    rule = next(i for i, line in enumerate(lines) if _is_rule(line))
    rows = [line for line in lines if not _is_rule(line)]
    width = max(len(line) for line in rows)
    used = "".join("x" if any(line[i : i + 1] not in ("", " ") for line in rows) else " " for i in range(width))
    start, end = [m.span() for m in re.finditer("x+", used)][column]
    part = lines[:rule] if header else lines[rule + 1 :]
    return "".join(line[start:end].strip() for line in part)


def tables(output: str, title: str) -> str:
    """The lines of the table titled ``title`` (up to the next blank line after its body)."""
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith(title))
    rest = lines[first:]
    rule = next(i for i, line in enumerate(rest) if _is_rule(line))
    end = next((i for i in range(rule + 1, len(rest)) if not rest[i].strip()), len(rest))
    return "\n".join(rest[:end])


def test_inspect_in_a_narrow_terminal_folds_and_never_cuts(long_names):
    result = asides_process("inspect", long_names, columns="40")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "…" not in out and "..." not in out
    assert max(len(line) for line in out.splitlines()) <= 40
    branches, namespaces = tables(out, "Branches"), tables(out, "Namespaces on main")
    headers = [column_text(branches, i, header=True) for i in range(6)] + [column_text(namespaces, i, header=True) for i in range(6)]
    assert headers == [h.replace(" ", "") for h in BRANCH_HEADERS + NAMESPACE_HEADERS]  # no column dropped, only folded
    assert LONG_NAMESPACE in column_text(namespaces, 0)
    assert LONG_READER in column_text(namespaces, 1)
    assert "a-branch-with-a-rather-long-name-too" in column_text(branches, 0)


def test_inspect_into_a_pipe_keeps_each_row_on_one_line(long_names):
    result = asides_process("inspect", long_names)  # stdout is a pipe, COLUMNS unset
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "…" not in out
    row = next(line for line in out.splitlines() if LONG_NAMESPACE in line)
    assert LONG_READER in row and "passthrough" in row
    assert any("a-branch-with-a-rather-long-name-too" in line and "main" in line for line in out.splitlines())


def closed_pipe(*argv: str) -> tuple[int, str, str]:
    """Run asides with its stdout read for one line and then closed; the exit code, the line and
    what it printed on stderr."""
    process = subprocess.Popen([sys.executable, "-m", "asides", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline().decode()
    process.stdout.close()
    err = process.stderr.read().decode()
    return process.wait(timeout=120), first, err


def test_a_closed_pipe_ends_the_demo_quietly():
    code, first, err = closed_pipe("demo")
    assert first.strip()
    assert err == ""  # no traceback, no "Exception ignored"
    assert code == 141


def test_a_closed_pipe_ends_an_export_quietly(capsys, tmp_path):
    source = tmp_path / "many.jsonl"
    line = '{"participant":"u","content":[{"type":"text","text":"%s"}]}\n' % ("x" * 500)
    source.write_text(line * 2000, encoding="utf-8")
    store = str(tmp_path / "many.db")
    assert run(capsys, "import", store, str(source))[0] == 0
    for command in ("export", "dump"):
        code, first, err = closed_pipe(command, store)
        assert first.startswith("{") and err == "" and code == 141, (command, err)


def test_head_in_a_shell_pipeline_sees_one_line_and_no_error():
    result = subprocess.run(f"{sys.executable} -m asides demo | head -1", shell=True, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == ""
