"""The smaller edges a new user met at the command line (issue 21, item 7), through ``main([...])``:
``-n ""`` is refused, the unknown-namespace hint names the reader given, ``NO_COLOR`` means no
escape codes, counted nouns agree, and inspect's legend names the columns it shows.

The issue's other edges are tested with their subjects: a name of the wrong type in
tests/store/test_names.py, a ``StoreLockedError`` met by an ``AsidesSession`` in
tests/integrations/test_openai_agents_session.py, a leak report's places in
tests/testing/test_testing_leaks.py."""

from __future__ import annotations

import json

import pytest
import trio

from asides import PassthroughStrategy, open_runtime, text
from asides._cli._main import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def _one_message(path: str) -> None:
    async with open_runtime(path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("Hello, ann.")])


@pytest.fixture
def store(tmp_path) -> str:
    path = str(tmp_path / "room.db")
    trio.run(_one_message, path)
    return path


def test_an_empty_namespace_is_refused(capsys, store):
    code, out, err = run(capsys, "compile", store, "-n", "")
    assert (code, out) == (2, "")
    assert "--namespace must name a namespace: a namespace must not be empty" in err


def test_the_unknown_namespace_hint_names_the_reader_given(capsys, store):
    code, _out, err = run(capsys, "compile", store, "-n", "agents/zed", "--reader", "zed")
    assert code == 1
    assert "compiles as passthrough for reader 'zed'" in err and "for no reader" not in err
    code, _out, err = run(capsys, "compile", store, "-n", "agents/zed")
    assert code == 1 and "compiles as passthrough for no reader" in err


def test_no_color_means_no_escape_codes_even_on_a_terminal(capsys, store, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes the output for a terminal
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, _err = run(capsys, "inspect", store)
    assert code == 0 and "\x1b[" in out  # the premise: bold and dim on a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, _err = run(capsys, "inspect", store)
    assert code == 0 and "\x1b" not in out and "agents/ann" in out


def test_counted_nouns_agree(capsys, store, tmp_path):
    code, out, _err = run(capsys, "compile", store, "-n", "agents/ann")
    assert code == 0 and ": 1 message, ~" in out
    lines = tmp_path / "one.jsonl"
    lines.write_text(json.dumps({"participant": "user", "content": [{"type": "text", "text": "hi"}]}) + "\n")
    code, out, _err = run(capsys, "import", str(tmp_path / "new.db"), str(lines))
    assert code == 0 and "imported 1 message into a new store" in out and "now 1 message)" in out


def test_inspect_legend_names_the_columns_it_shows(capsys, store):
    code, out, _err = run(capsys, "inspect", store)
    assert code == 0
    words = " ".join(out.split())
    assert "head: the branch's newest sequence" in words and "memories: summary records per level" in words
    assert "bad:" not in words  # no bad column is shown
