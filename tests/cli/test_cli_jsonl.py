"""``asides import`` reads JSON lines strictly: lines split on ``\\n`` only (so every character
round-trips through export and import), and every bad line is ``line N: ...`` with exit 1, never
a traceback, with nothing written."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import one_error_line, run

BREAKS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e\r"


def write_lines(path, lines: list[str]) -> str:
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return str(path)


def message(text: str, **extra) -> str:
    return json.dumps({"participant": "user", "content": [{"type": "text", "text": text}], **extra}, ensure_ascii=False)


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(BREAKS), min_size=1).filter(
    lambda t: t.strip()
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(texts, min_size=1, max_size=4), participant=st.from_regex(r"[a-z][a-z0-9_-]{0,15}", fullmatch=True))
def test_every_character_survives_export_and_import(capsys, tmp_path_factory, texts, participant):
    """Text holding U+2028, U+2029, U+0085 or any other character comes back from
    import -> export -> import -> export exactly (str.splitlines would split on several)."""
    directory = tmp_path_factory.mktemp("round")
    lines = [
        json.dumps(
            {"participant": participant, "content": [{"type": "text", "text": t}], "metadata": {"k": t}, "timestamp": 1.0},
            ensure_ascii=False,
        )
        for t in texts
    ]
    first = str(directory / "first.db")
    code, _out, err = run(capsys, "import", first, write_lines(directory / "in.jsonl", lines))
    assert code == 0, err
    code, exported, err = run(capsys, "export", first)
    assert code == 0, err
    rows = [json.loads(line) for line in exported.split("\n")[:-1]]
    assert [r["content"][0]["text"] for r in rows] == texts
    assert all(r["participant"] == participant and r["metadata"] == {"k": t} for r, t in zip(rows, texts, strict=True))
    again = directory / "again.jsonl"
    again.write_bytes(exported.encode("utf-8"))
    second = str(directory / "second.db")
    code, _out, err = run(capsys, "import", second, str(again))
    assert code == 0, err
    assert run(capsys, "export", second)[1] == exported


def refused(capsys, tmp_path, lines: list[str]) -> str:
    """Import ``lines`` into a new store: refused (exit 1), no traceback, no store; the error."""
    target = tmp_path / "target.db"
    code, out, err = run(capsys, "import", str(target), write_lines(tmp_path / "bad.jsonl", lines))
    assert code == 1, err
    assert out == "" and "Traceback" not in err
    assert "import refused, nothing was written" in err.splitlines()[0]
    assert not target.exists()
    return err


def test_deep_json_names_its_line(capsys, tmp_path):
    err = refused(capsys, tmp_path, [message("fine"), "[" * 10_000 + "]" * 10_000])
    assert "line 2: nested too deeply" in err


def test_deep_metadata_is_never_a_traceback(capsys, tmp_path):
    """Nesting JSON can still read, but deeper than a write accepts or than validation can
    walk: refused naming its line, or (within the library's limit) imported."""
    deep = "[" * 900 + "]" * 900
    source = write_lines(tmp_path / "deep.jsonl", [message("fine"), message("fine")[:-1] + f', "metadata": {{"x": {deep}}}}}'])
    code, _out, err = run(capsys, "import", str(tmp_path / "t.db"), source)
    assert "Traceback" not in err
    assert code == 0 or (code == 1 and "line 2" in err and "line 1:" not in err), err


@pytest.mark.parametrize("stamp", ["1" + "0" * 400, "1e308", "-1e20", str(2**70)])
def test_a_timestamp_no_date_can_hold_names_its_line(capsys, tmp_path, stamp):
    err = refused(capsys, tmp_path, [message("fine"), message("fine")[:-1] + f', "timestamp": {stamp}}}'])
    assert "line 2: timestamp" in err


def test_a_huge_integer_elsewhere_is_refused_or_kept_never_a_traceback(capsys, tmp_path):
    err = refused(capsys, tmp_path, [message("fine")[:-1] + f', "metadata": {{"n": {"9" * 5000}}}}}'])
    assert "line 1:" in err


@pytest.mark.parametrize(
    "line, place",
    [
        (message("fine")[:-1] + ', "metadata": {"note": "\\udc80"}}', "line 2: metadata.note"),
        ('{"participant": "\\ud800x", "content": [{"type": "text", "text": "a"}]}', "line 2: participant"),
        ('{"participant": "u", "content": [{"type": "text", "text": "\\udc80"}]}', "line 2: content[0].text"),
        (message("fine")[:-1] + ', "metadata": {"\\udc80": 1}}', "line 2: metadata"),
    ],
)
def test_a_lone_surrogate_names_its_line_and_place(capsys, tmp_path, line, place):
    err = refused(capsys, tmp_path, [message("fine"), line])
    assert place in err and "lone surrogate" in err


def test_a_key_given_twice_names_its_line(capsys, tmp_path):
    err = refused(
        capsys,
        tmp_path,
        [message("fine"), '{"participant": "a", "participant": "b", "content": [{"type": "text", "text": "x"}]}'],
    )
    assert "line 2: an object gives the key 'participant' twice" in err
    err = refused(capsys, tmp_path, ['{"participant": "a", "content": [{"type": "text", "text": "x", "text": "y"}]}'])
    assert "line 1: an object gives the key 'text' twice" in err


def test_bytes_that_are_not_utf8_name_their_line(capsys, tmp_path):
    source = tmp_path / "latin.jsonl"
    source.write_bytes(message("fine").encode() + b"\n" + message("caf\xe9").encode("latin-1") + b"\n")
    target = tmp_path / "t.db"
    code, _out, err = run(capsys, "import", str(target), str(source))
    assert code == 1 and "line 2: not UTF-8" in err and not target.exists()


def test_every_bad_line_is_named_in_order(capsys, tmp_path):
    err = refused(capsys, tmp_path, ["[" * 5000, message("fine"), '{"participant": "a", "participant": "b"}', "NaN"])
    problems = err.splitlines()[1:]
    assert [p.split(":")[0].strip() for p in problems] == ["line 1", "line 3", "line 4"]


@pytest.mark.parametrize("content", [b"", b"\n", b"\n \n\t\n"])
def test_an_empty_file_is_refused_and_no_store_is_made(capsys, tmp_path, content):
    source = tmp_path / "empty.jsonl"
    source.write_bytes(content)
    target = tmp_path / "new.db"
    code, _out, err = run(capsys, "import", str(target), str(source))
    assert code == 1
    assert "empty" in one_error_line(err)
    assert not target.exists() and sorted(os.listdir(tmp_path)) == ["empty.jsonl"]


def test_import_refuses_a_store_that_holds_messages_unless_append(capsys, tmp_path):
    target = str(tmp_path / "s.db")
    source = write_lines(tmp_path / "one.jsonl", [message("one")])
    assert run(capsys, "import", target, source)[0] == 0
    before = open(target, "rb").read()  # noqa: SIM115
    code, _out, err = run(capsys, "import", target, source)
    assert code == 1 and "already holds messages" in one_error_line(err)
    assert open(target, "rb").read() == before  # noqa: SIM115
    code, out, err = run(capsys, "import", target, source, "--append")
    assert code == 0, err
    assert "now 2 messages" in out
