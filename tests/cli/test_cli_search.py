"""``asides search PATH --reader R [--namespace NS] QUERY``: one line per hit, ``--json``, only
what R may see, memories through R's namespace, nothing written, usage errors in one line."""

from __future__ import annotations

import json

import pytest
import trio

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text
from asides._cli._main import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(tmp_path) -> str:
    path = str(tmp_path / "s.db")

    async def build() -> None:
        async with open_runtime(path, model=ExtractiveModel()) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            ann = await rt.open_manager(
                "agents/ann",
                strategy=AutobiographicalStrategy(target_chunk_tokens=40, head_window_tokens=0, recent_window_tokens=40),
                view_reader="ann",
            )
            await host.add_message("user", [text("the badger key is under the mat", ["ann"])])
            await host.add_message("carol", [text("a badger was seen near the\nriver")])
            for i in range(12):
                await host.add_message("user", [text(f"filler line {i} about the garden and the badger sett")])
            await ann.drain()

    trio.run(build)
    return path


def test_one_line_per_hit_only_what_the_reader_sees(capsys, store):
    code, out, err = run(capsys, "search", store, "--reader", "bob", "badger", "--limit", "3")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 3
    assert all("key is under the mat" not in line for line in lines)
    code, out, _err = run(capsys, "search", store, "--reader", "bob", "badger", "river")
    assert code == 0 and len(out.splitlines()) == 1 and "#4 carol: a badger was seen near the river" in out
    code, out, _err = run(capsys, "search", store, "--reader", "bob", "badger", "key")
    assert code == 0 and out.startswith("# nothing 'bob' may see")
    code, out, _err = run(capsys, "search", store, "--reader", "ann", "badger", "key")
    assert "the badger key is under the mat" in out


def test_json_and_memories_through_the_readers_namespace(capsys, store):
    code, out, _err = run(capsys, "search", store, "--reader", "ann", "garden", "--json", "--limit", "1000")
    assert code == 0
    answer = json.loads(out)
    assert (answer["reader"], answer["namespace"], answer["branch"]) == ("ann", "agents/ann", "main")
    kinds = {hit["kind"] for hit in answer["hits"]}
    assert kinds == {"message", "memory"}, "ann's namespace has memories of the garden lines"
    assert all({"id", "text", "score", "sequence"} <= hit.keys() for hit in answer["hits"])
    code, out, _err = run(capsys, "search", store, "--reader", "ann", "garden", "--json", "--kind", "memory")
    assert {hit["kind"] for hit in json.loads(out)["hits"]} == {"memory"}


def test_nothing_is_written(capsys, store):
    with open(store, "rb") as f:
        before = f.read()
    run(capsys, "search", store, "--reader", "ann", "badger")
    with open(store, "rb") as f:
        assert f.read() == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--reader", "bob", ",,,"], "query"),
        (["--reader", "bob", "x", "--limit", "0"], "--limit"),
        (["--reader", "", "x"], "--reader"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, store, argv, says):
    code, out, err = run(capsys, "search", store, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("asides: ") and says in lines[0]
