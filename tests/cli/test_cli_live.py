"""The reading commands (``inspect``, ``compile``, ``export``, ``dump``) open the store read-only:
they never create or change a file, refuse a missing, empty or damaged one in one line, and work
while a host holds the store (another process, or a runtime in the same process)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import trio
from test_cli import ROOT, built, one_error_line, run  # noqa: F401  (built is a fixture)

from asides import PassthroughStrategy, open_runtime, text

READS = [
    ["inspect"],
    ["inspect", "--json"],
    ["compile", "--namespace", "agents/ann"],
    ["compile", "--namespace", "host", "--reader", "bob"],
    ["export"],
    ["dump"],
]
HOLDER = os.path.join(ROOT, "tests", "crash_writer.py")


def file_state(path: str) -> dict[str, object]:
    """What a read must leave as it was: the store file's bytes and mtime, and which of its
    -wal/-shm files exist (and the -wal's bytes: a reader never writes it)."""
    with open(path, "rb") as handle:
        data = handle.read()
    wal = path + "-wal"
    wal_bytes = open(wal, "rb").read() if os.path.exists(wal) else None  # noqa: SIM115
    return {
        "bytes": data,
        "mtime": os.stat(path).st_mtime_ns,
        "wal": wal_bytes,
        "present": sorted(name for name in os.listdir(os.path.dirname(path))),
    }


def subprocess_asides(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "asides", *argv], capture_output=True, text=True, timeout=60, cwd=ROOT, env=dict(os.environ, COLUMNS="200")
    )


def with_path(argv: list[str], path: str) -> list[str]:
    return [argv[0], path, *argv[1:]]


def test_reads_of_a_store_another_process_holds_work_and_change_nothing(built):  # noqa: F811
    holder = subprocess.Popen([sys.executable, HOLDER, built, "--hold"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        ready = holder.stdout.readline() if holder.stdout else ""
        assert ready.startswith("READY"), ready
        assert os.path.exists(built + "-wal") and os.path.exists(built + "-shm")
        before = file_state(built)
        outputs = {}
        for argv in READS:
            result = subprocess_asides(*with_path(argv, built))
            assert result.returncode == 0, (argv, result.stderr)
            assert "Traceback" not in result.stderr
            outputs[" ".join(argv)] = result.stdout
            assert file_state(built) == before, argv
        # the reads see the holder's own write, which is still only in its write-ahead log
        assert '"text":"held"' in outputs["export"] and '"participant":"holder"' in outputs["dump"]
        assert "for reader 'bob'" in outputs["compile --namespace host --reader bob"]
        assert holder.poll() is None  # the host kept running, undisturbed
    finally:
        holder.kill()
        holder.wait()


async def test_reads_while_this_process_holds_the_store(built):  # noqa: F811
    """A runtime in this process holds the store (and writes while the reads run): each read runs
    the command's own trio.run in a worker thread."""
    from asides._cli._main import main

    async with open_runtime(built) as rt:
        host = await rt.open_manager("writer", strategy=PassthroughStrategy())
        await host.add_message("user", [text("written by the live host")])
        for argv in READS:
            before = file_state(built)
            code = await trio.to_thread.run_sync(main, with_path(argv, built))
            assert code == 0, argv
            assert file_state(built) == before, argv
        await host.add_message("user", [text("and it still writes")])


def test_reads_of_a_closed_store_create_no_file(capsys, built):  # noqa: F811
    """With no host, a read creates no -wal or -shm file (SQLite would, for a read-only open of a
    store in WAL mode, unless it is told nothing else has the file open)."""
    before = file_state(built)
    assert not os.path.exists(built + "-wal")
    for argv in READS:
        code, out, err = run(capsys, *with_path(argv, built))
        assert code == 0, (argv, err)
        assert out
        assert file_state(built) == before, argv


@pytest.mark.parametrize("command", [["inspect"], ["export"], ["dump"], ["compile", "-n", "agents/ann"]])
def test_an_empty_file_is_refused_in_one_line_and_left_as_it_is(capsys, tmp_path, command):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    code, out, err = run(capsys, command[0], str(path), *command[1:])
    assert code == 1
    assert "empty file" in one_error_line(err)
    assert out == ""
    assert path.read_bytes() == b"" and sorted(os.listdir(tmp_path)) == ["empty.db"]


@pytest.mark.parametrize("command", [["inspect"], ["export"], ["dump"], ["compile", "-n", "agents/ann"]])
def test_a_missing_file_is_refused_in_one_line_and_not_created(capsys, tmp_path, command):
    path = tmp_path / "missing.db"
    code, out, err = run(capsys, command[0], str(path), *command[1:])
    assert code == 1
    assert "does not exist" in one_error_line(err)
    assert out == "" and os.listdir(tmp_path) == []


def damaged_copies(source: str, directory: str) -> dict[str, str]:
    """A store cut short, one with its pages overwritten, and a file that only starts like
    SQLite."""
    data = open(source, "rb").read()  # noqa: SIM115
    made = {
        "truncated": data[: len(data) // 3],
        "overwritten": data[:100] + b"\xff" * (len(data) - 100),
        "header only": b"SQLite format 3\x00" + b"\x00" * 50,
    }
    paths = {}
    for name, content in made.items():
        path = os.path.join(directory, name.replace(" ", "-") + ".db")
        with open(path, "wb") as handle:
            handle.write(content)
        paths[name] = path
    return paths


@pytest.mark.parametrize("command", [["inspect"], ["export"], ["dump"], ["compile", "-n", "agents/ann"]])
def test_a_damaged_file_is_one_line_exit_1_never_a_traceback(built, tmp_path, command):  # noqa: F811
    directory = tmp_path / "damaged"
    directory.mkdir()
    for name, path in damaged_copies(built, str(directory)).items():
        before = open(path, "rb").read()  # noqa: SIM115
        result = subprocess_asides(command[0], path, *command[1:])
        assert result.returncode == 1, (name, result.stdout, result.stderr)
        line = one_error_line(result.stderr)
        assert path in line or repr(path) in line, line
        assert open(path, "rb").read() == before  # noqa: SIM115
    assert sorted(os.listdir(directory)) == ["header-only.db", "overwritten.db", "truncated.db"]
