"""The examples run as a user runs them: a subprocess from the repository root, offline (no
``ANTHROPIC_API_KEY`` in its environment), so that none of them can rot.

- ``examples/two_readers.py``: SPEC A1, A2, A5 and 3.3.1 (no compiled block has an audience), the
  seed's Problem scenario, fixed.
- ``examples/multi_agent_host.py``: a host loop of three agents over one log written once
  (3.3.1), compiling each turn while drains compress in the background (D3); C4 (no leak).
- ``examples/racing_opens.py``: R1, R2, R6 and 3.3.1 (a claim is one write; an open that claims
  nothing writes nothing) under racing opens on a Trio ``MockClock``.
- ``examples/asyncio_host.py``: the API from asyncio (SPEC 2), and reopening a file store (S1, R3).

``examples/test_my_host.py`` is a test file itself: pytest collects it (``examples`` is among the
``testpaths``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(script: str, *args: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("ANTHROPIC_API_KEY", None)  # the examples run offline
    env.update(environment)
    return subprocess.run(
        [sys.executable, os.path.join("examples", script), *args],
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


def test_multi_agent_host_example():
    """``python examples/multi_agent_host.py`` exits 0 offline: one line per turn (60 by default),
    the agents taking turns, answers to private lines kept private; compression happened in the
    background (every agent has memories at the end) and the leak check finds nothing."""
    result = _run("multi_agent_host.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()

    assert _line(lines, "answers: ").startswith("answers: offline")
    turns = [line for line in lines if line.startswith("turn ")]
    assert len(turns) == 60
    speakers = [re.match(r"turn +\d+: (\w+)", line).group(1) for line in turns]
    assert speakers == ["ann", "bob", "cleo"] * 20
    assert all("| pending: ann " in line for line in turns)
    assert any("answered to cleo only" in line for line in turns)
    assert any("answered to bob+cleo only" in line for line in turns)

    for name in ("ann", "bob", "cleo"):
        summary = _line(lines, f"{name}: sees ")
        level_one = int(re.search(r"memories L1 ×(\d+)", summary).group(1))
        assert level_one > 0, summary
    assert _line(lines, "no leak: ").startswith("no leak: none of the 25 private lines")
    assert not any(line.startswith("LEAK") for line in lines)


def test_multi_agent_host_example_is_deterministic_where_it_says(tmp_path):
    """The conversation and the final counts do not depend on how far the background drains had
    got (only the per-turn sizes and pending work may); ``--store`` keeps the store."""
    runs = []
    for number in (1, 2):
        store = tmp_path / f"run{number}.db"
        result = _run("multi_agent_host.py", "--turns", "30", "--store", str(store))
        assert result.returncode == 0, result.stderr
        assert store.exists()
        lines = result.stdout.splitlines()
        answers = [line.split(" answered ")[1].split(" | ")[0] for line in lines if line.startswith("turn ")]
        finals = [line for line in lines if re.match(r"(ann|bob|cleo): sees ", line)]
        runs.append((answers, [re.sub(r"; final compile.*", "", line) for line in finals]))
    assert runs[0] == runs[1]
    assert _run("multi_agent_host.py", "--store", str(tmp_path / "run1.db")).returncode != 0  # never overwrites


def test_multi_agent_host_stops_with_one_line_when_the_api_cannot_be_reached():
    """With ``ANTHROPIC_API_KEY`` set and no network (here: the API's address is a closed local
    port), the host stops at its first answer with exit code 1 and one line on stderr naming the
    error and ``--offline``, not a traceback; with ``--offline`` the same environment runs offline."""
    unreachable = {"ANTHROPIC_API_KEY": "sk-test-not-a-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    result = _run("multi_agent_host.py", "--turns", "3", **unreachable)
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("multi_agent_host: the Anthropic API did not answer (APIConnectionError")
    assert line.endswith("or run with --offline")
    assert "answers and memories: AnthropicModel" in result.stdout

    offline = _run("multi_agent_host.py", "--turns", "6", "--offline", **unreachable)
    assert offline.returncode == 0, offline.stderr
    assert _line(offline.stdout.splitlines(), "answers: ").startswith("answers: offline")


def test_examples_import_public_names_only():
    """Every example imports asides through its public surface (``asides``, ``asides.testing``
    and an integration's public home), never a private module or a layer package, and needs no
    path tricks."""
    folder = os.path.join(ROOT, "examples")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name == "openai_agents_room.py":  # that one has its own owner
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as source:
            code = source.read()
        imports = re.findall(r"^\s*(?:from|import) (asides[\w.]*)", code, re.MULTILINE)
        assert imports, name
        public = {"asides", "asides.lowlevel", "asides.testing", "asides.integrations.langchain", "asides.integrations.pydantic_ai"}
        assert set(imports) <= public, (name, imports)
        assert "sys.path" not in code, name


def test_racing_opens_example():
    """``python examples/racing_opens.py`` exits 0: of 20 racing opens exactly one wins, one of
    the four that open at the first simulated instant; the 19 others are refused with
    ``ReaderClaimError`` naming the winner; the store holds only the winner's claim, before and
    after reopening, and the head rose by exactly one (the losers wrote nothing)."""
    result = _run("racing_opens.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()

    winner_line = _line(lines, "winner: ")
    winner = re.match(r"winner: (reader-\d+), whose open started at t=0\.1s", winner_line).group(1)
    assert winner in {"reader-0", "reader-5", "reader-10", "reader-15"}
    refused = [line for line in lines if line.startswith("  refused ")]
    assert len(refused) == 19
    assert all("ReaderClaimError: open for reader 'reader-" in line for line in refused)
    assert all(f"records reader {winner!r}" in line for line in refused)
    assert {re.match(r"  refused (reader-\d+)", line).group(1) for line in refused} == {f"reader-{i}" for i in range(20)} - {winner}

    claim = {"agents/shared/reader": winner}
    assert json.loads(_line(lines, "reader records in the store: ").split(": ", 1)[1]) == claim
    assert _line(lines, "branch head: ") == "branch head: 1 before the race, 2 after it (rose by 1)"
    assert json.loads(_line(lines, "all state records: ").split(": ", 1)[1]) == claim
    assert json.loads(_line(lines, "all state records after reopening the file: ").split(": ", 1)[1]) == claim
    assert _line(lines, "the 19 losers wrote nothing: ") == (
        f"the 19 losers wrote nothing: one claim ({winner}), one write, no other record"
    )


def test_asyncio_host_example():
    """``python examples/asyncio_host.py`` exits 0 under plain asyncio (the example imports no
    Trio): each agent's compile holds its own private line and the shared ones only; after the
    runtime closed and the file was reopened, both messages are there and ``agents/bob``, opened
    with no reader, compiles for the reader it records (R3), as before."""
    with open(os.path.join(ROOT, "examples", "asyncio_host.py"), encoding="utf-8") as source:
        assert not re.search(r"^\s*(import|from) trio", source.read(), re.MULTILINE)
    result = _run("asyncio_host.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()

    ann = json.loads(_line(lines, "ann's compile (asyncio): ").split(": ", 1)[1])
    bob = json.loads(_line(lines, "bob's compile (asyncio): ").split(": ", 1)[1])
    assert ann == ["user: Ann, book the room.", "user: Thanks, both.", "bob: Deposit paid."]
    assert bob == ["user: Bob, pay the deposit.", "user: Thanks, both.", "bob: Deposit paid."]

    assert _line(lines, "after reopening: ") == "after reopening: 2 messages survived; agents/bob compiles for 'bob'"
    assert json.loads(_line(lines, "bob's compile after reopening: ").split(": ", 1)[1]) == bob
