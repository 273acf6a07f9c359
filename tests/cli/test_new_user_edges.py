"""The smaller edges a new user met (issue 21, item 7), each through the public surface: a wrong
type is an ``ArgumentTypeError``, ``-n ""`` is refused, the unknown-namespace hint names the
reader given, ``NO_COLOR`` means no escape codes, counted nouns agree, a ``StoreLockedError``
met by an ``AsidesSession`` points to ``AsidesSession.bound_to``, a leak report numbers a compile's
places one way, and inspect's legend names the columns it shows."""

from __future__ import annotations

import json

import pytest
import trio

from asides import (
    ArgumentTypeError,
    InvalidNameError,
    PassthroughStrategy,
    StoreLockedError,
    open_runtime,
    text,
)
from asides._cli._main import main
from asides.testing import LeakCheck


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


@pytest.mark.parametrize("where", ["participant", "namespace", "view_reader", "branch"])
async def test_a_name_of_the_wrong_type_is_an_argument_type_error(store_path, where):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
        head = rt.store.head("main")
        calls = {
            "participant": lambda: manager.add_message(3, [text("x")]),  # type: ignore[arg-type]
            "namespace": lambda: rt.open_manager(3, strategy=PassthroughStrategy()),  # type: ignore[arg-type]
            "view_reader": lambda: rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader=3),  # type: ignore[arg-type]
            "branch": lambda: manager.fork(3),  # type: ignore[arg-type]
        }
        with pytest.raises(ArgumentTypeError) as refused:
            await calls[where]()
        assert isinstance(refused.value, InvalidNameError) and isinstance(refused.value, TypeError)
        assert refused.value.path == where
        assert rt.store.head("main") == head  # nothing written


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


async def test_a_session_refused_a_file_its_host_holds_points_to_bound_to(tmp_path):
    pytest.importorskip("agents")
    from asides.integrations.openai_agents import AsidesSession

    path = str(tmp_path / "room.db")
    async with open_runtime(path):
        with pytest.raises(StoreLockedError, match=r"await AsidesSession\.bound_to\(rt, session_id, reader=\.\.\.\)"):
            AsidesSession("workshop", path, reader="ann")


async def test_a_leak_report_numbers_a_compiles_places_one_way(store_path):
    """A marker that reaches bob through a compile is reported at the compiled message's place,
    and its provenance at the same number, with the stored id named as an id (it used to say
    ``message 2`` for the place and ``provenance of message 5`` for the id)."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("room", strategy=PassthroughStrategy())
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        await host.add_message("user", [text("Hello, all.")])
        leaked = await host.add_message("user", [text("ANN-ONLY the code is 4417.")])  # no audience: a leak, on purpose
        compiled = await bob.compile()
        check = LeakCheck({"ann": ["ANN-ONLY"]})
        check.record("bob", compiled, where="compile")
        places = sorted(leak.where for leak in check.leaks())
        assert places == ["compile, message 2", f"compile, provenance of message 2 (stored id {leaked.id})"]
