"""The benchmark instruments: they run end to end on tiny histories against the library as it is
now, and they judge the performance goals as the issue states them. No wall-clock time is
asserted; the end-to-end runs only check that every figure was measured."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # the benchmarks live beside the package, not in it
    sys.path.insert(0, ROOT)

from pg_cluster import pg_cluster_fixture  # noqa: E402, F401  (the fixture pg_cluster)

from benchmarks import _asides_cases as cases  # noqa: E402
from benchmarks import _pg_server, history, limits, memory, peers, postgres, search  # noqa: E402
from benchmarks._common import MESSAGE_BYTES, Stats, message_text, rounds  # noqa: E402
from benchmarks._peer_libraries import AppendAndRead  # noqa: E402
from benchmarks._under_writes import CompileUnderWrites  # noqa: E402


def test_every_message_holds_300_distinct_bytes() -> None:
    texts = [message_text(i) for i in range(500)]
    assert all(len(t.encode()) == MESSAGE_BYTES for t in texts)
    assert len(set(texts)) == len(texts)


def test_stats_are_median_and_90th_percentile() -> None:
    stats = Stats.of([float(x) for x in range(1, 11)])
    assert stats.median == 5.5 and stats.p90 == 9.0 and stats.count == 10


def test_rounds_stop_at_the_budget_but_never_before_the_minimum() -> None:
    assert list(rounds(10, budget_s=0.0, minimum=3)) == [0, 1, 2]
    assert list(rounds(5, budget_s=1e9)) == [0, 1, 2, 3, 4]


def _stats(seconds: float) -> Stats:
    return Stats(seconds, seconds, 1)


def _results(
    *, add: float, compile_: float, many: float, per_write: float, under_many: float, auto: float, auto_reader: float
) -> peers.PeerResults:
    settings = peers.PeerSettings(sizes=(2000, 20000), autobiographical_sizes=(20000,))
    peer = {n: AppendAndRead(_stats(900e-6), _stats(50e-3)) for n in settings.sizes}
    graph = {n: AppendAndRead(_stats(25e-3), _stats(12e-3)) for n in settings.sizes}
    main = {n: cases.MainSeries(_stats(add), _stats(compile_), _stats(1e-4), _stats(1e-4), _stats(1e-3)) for n in settings.sizes}
    return peers.PeerResults(
        settings,
        peer,
        graph,
        main,
        cases.ManyManagers(_stats(add), _stats(many), _stats(add), _stats(add), 200),
        cases.ConcurrentWriters(per_write, _stats(1e-3), 16, 1600),
        CompileUnderWrites(_stats(compile_), 1, 200, 200.0),
        CompileUnderWrites(_stats(under_many), 200, 200, 200.0),
        {
            (20000, False): cases.AutobiographicalCompile(_stats(auto), 20000, False, 1.0, 400),
            (20000, True): cases.AutobiographicalCompile(_stats(auto_reader), 20000, True, 1.0, 400),
        },
    )


def test_goals_are_met_exactly_when_the_issue_says() -> None:
    good = peers.goals(_results(add=200e-6, compile_=4e-3, many=250e-6, per_write=70e-6, under_many=7e-3, auto=4e-3, auto_reader=4.3e-3))
    assert [g.met for g in good if g.met is not None] == [True] * 9
    assert [g for g in good if g.met is None][0].goal.endswith("@200k ≤ 10.0 ms")  # not measured in this run

    bad = peers.goals(_results(add=400e-6, compile_=7e-3, many=600e-6, per_write=90e-6, under_many=15e-3, auto=6e-3, auto_reader=7e-3))
    assert [g.met for g in bad if g.met is not None] == [False] * 9


@pytest.mark.slow
def test_peers_measure_every_figure_on_a_tiny_history(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("agents")
    pytest.importorskip("langgraph.checkpoint.sqlite.aio")
    settings = peers.PeerSettings(
        sizes=(40, 80),
        appends=4,
        reads=3,
        langgraph_appends=3,
        budget_s=0.0,
        managers=3,
        writers=2,
        per_writer=3,
        write_rate=200.0,
        compiles_under_writes=3,
        autobiographical_sizes=(120,),
        autobiographical_compiles=3,
    )
    results = peers.measure(settings)
    assert results.main[80].add_message.count == 4 and results.main[80].compile.count == 3 and results.session[40].read.count == 3
    assert results.concurrent.writes == 6 and results.compile_many.managers == 3
    assert set(results.autobiographical) == {(120, False), (120, True)}
    peers.report(results)
    out = capsys.readouterr().out
    for name in ("SQLiteSession", "AsyncSqliteSaver", "add_message, 3 managers open", "Goals"):
        assert name in out


@pytest.mark.slow
def test_drivers_time_every_driver_and_configuration() -> None:
    """In a process of its own: importing trio_asyncio patches asyncio's loop policy for the whole
    process, which would break every later asyncio user of this one (Playwright's sync API)."""
    if importlib.util.find_spec("trio_asyncio") is None:  # looked for, not imported (see above)
        pytest.skip("the bridge asides used before 0.2 is measured for reference: pip install -e '.[bench]'")
    child = """
from benchmarks import drivers
results = drivers.measure(count=3, budget_s=0.0)
assert len(results) == len(drivers.TRIO_DRIVERS) + 1, results
assert all(set(by) == set(drivers.CONFIGS) and all(s.count == 3 for s in by.values()) for by in results.values())
drivers.report(results)
"""
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    assert "dedicated thread" in done.stdout


@pytest.mark.slow
def test_memory_opens_a_store_in_a_fresh_process(capsys: pytest.CaptureFixture[str]) -> None:
    results = memory.measure((300,))
    r = results[300]
    assert r["messages"] == 300 and r["rows"] >= 300 and r["body_bytes"] > 300 * MESSAGE_BYTES
    assert r["compiled_messages"] > 0
    goals = memory.report(results)
    assert [g.met is None for g in goals] == [False, True]  # 1M is not measured here


@pytest.mark.slow
def test_postgres_part_measures_both_stores_and_langgraph_and_prints_its_tables(pg_cluster, capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    settings = postgres.PostgresSettings(
        sizes=(40, 80), appends=4, reads=3, opens=2, langgraph_appends=3, budget_s=0.0, process_seconds=0.3, task_writes=32
    )
    results = postgres.measure(settings, pg_cluster.url, "the tests' server")
    for backend in ("sqlite", "postgres"):
        series = results.series[(backend, 80)]
        assert series.add_message.count == 4 and series.compile.count == 3 and series.open.count == 2
    assert results.series[(postgres.NORMAL, 80)].add_message.count == 4
    assert results.bare[80].setting == "on" and results.bare[80].default.count == results.bare[80].normal.count == 4
    assert set(results.tasks) == {(store, n, w) for store in postgres.STORES for n in (40, 80) for w in (1, 16)}
    assert all(0 < t.commits <= t.writes for t in results.tasks.values())
    assert set(results.processes) == {(b, n, p) for n in (40, 80) for b, p in (("sqlite", 1), ("postgres", 1), ("postgres", 4))}
    assert all(p.writes > 0 for p in results.processes.values())
    with psycopg.connect(pg_cluster.url) as conn:  # every schema the run made is gone
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'asides_bench_%'").fetchone()
    assert left == (0,)

    postgres.report(results)
    out = capsys.readouterr().out
    for line in (
        "add_message, asides on PostgreSQL",
        "PostgreSQL ÷ SQLite",
        "bare psycopg INSERT, synchronous_commit=on",
        "bare psycopg INSERT, synchronous_commit=off",
        'add_message, asides on PostgreSQL, synchronous="NORMAL"',
        "16 writers @80",
        "open, asides on SQLite",
        "4 processes @80",
        "Goals",
    ):
        assert line in out
    if results.langgraph_missing is None:
        assert results.langgraph is not None and results.langgraph[80].read.count == 3
        assert "aget_tuple, LangGraph AsyncPostgresSaver" in out and "LangGraph ÷ asides on PostgreSQL" in out
    else:
        assert "LangGraph AsyncPostgresSaver not measured" in out


def test_postgres_part_says_in_one_line_why_it_was_skipped(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(_pg_server, "why_unavailable", lambda: "PostgreSQL is not installed")
    assert postgres.run(quick=True) is None
    assert capsys.readouterr().out.strip() == "PostgreSQL: skipped: PostgreSQL is not installed"


def test_the_writers_rounds_on_the_default_store_span_whole_periods_of_its_background_work() -> None:
    """Each round of writers on the default store holds a whole number of the periods after
    which its indexer and its checkpoints have each run once, so every round pays alike."""
    from asides.store._drivers import CHECKPOINT_ROWS
    from asides.store._search import INDEX_EVERY

    for settings in (limits.LimitsSettings.quick(), limits.LimitsSettings.full()):
        writes = settings.per_writer * settings.writers
        assert writes % INDEX_EVERY == 0 and writes % CHECKPOINT_ROWS == 0 and writes == settings.normal_writes


def test_limits_measure_every_ratio_on_a_tiny_history(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(_pg_server, "why_unavailable", lambda: "PostgreSQL is not installed")
    settings = limits.LimitsSettings(
        sizes=(40, 80),
        writes=4,
        compiles=3,
        budget_s=0.0,
        compile_sizes=(300,),
        writers=2,
        normal_writes=6,
        durable_writes=4,
        writer_rounds=1,
    )
    results = limits.measure(settings)
    assert set(results.appends) == {40, 80} and all(
        a.bare.count == a.append.count == a.add_message.count == 4 for a in results.appends.values()
    )
    assert results.compiles[300].autobiographical.count == 3 and results.compiles[300].output > 0
    assert results.python > 0
    # one writer does as many writes as all the writers together, on the same store
    assert [(w.writers, w.writes) for w in (*results.writers.one, *results.writers.many)] == [(1, 6), (2, 6)]
    assert [(w.writers, w.writes) for w in (*results.writers_full.one, *results.writers_full.many)] == [(1, 4), (2, 4)]
    assert all(0 < w.commits <= w.writes for w in (*results.writers_full.one, *results.writers_full.many))
    limits.report(results)
    out = capsys.readouterr().out
    for line in (
        "bare sqlite3 INSERT at 80",
        "sum(range(1000))",
        "1 writer, synchronous=NORMAL (6 writes,",
        '2 writers, synchronous="FULL" (4 writes,',
        "Goals (issue 22, with the writers' goals that replaced its own)",
        "2 writers: wall per write ≤ 1 writer's add_message (synchronous=NORMAL)",
        '2 writers ≥ 4× 1 writer\'s throughput, synchronous="FULL"',
        "PostgreSQL: 2 writers ≥ 4× 1 writer's throughput, synchronous_commit=on  skipped: PostgreSQL is not installed",
        "skipped: PostgreSQL is not installed",
    ):
        assert line in out, line


def test_limits_measures_the_writers_on_postgresql_and_names_a_server_that_skips_the_disk(pg_cluster) -> None:
    import anyio

    durability = limits.PgDurability.of(pg_cluster.url)
    assert durability.session != "off" and durability.synchronous == (None if durability.server != "off" else "FULL")
    # the tests' server runs with fsync off: the output says the durable writers never waited for the disk
    assert any("fsync=off" in caveat for caveat in durability.caveats()) == (durability.fsync == "off")
    settings = limits.LimitsSettings(
        sizes=(40, 80), writes=4, compiles=3, budget_s=0.0, writers=2, normal_writes=6, durable_writes=4, writer_rounds=1
    )
    urls = (pg_cluster.fresh_url(), pg_cluster.fresh_url())
    bare, add, writers = anyio.run(limits._postgres_series, *urls, durability, settings, backend="trio")
    assert bare.count == add.count == 4
    assert [(w.writers, w.writes) for w in (*writers.one, *writers.many)] == [(1, 4), (2, 4)]


def test_limits_writers_goals_are_judged_as_the_issue_says() -> None:
    def writers(one: float, many: float, n: int = 16) -> cases.WriterRounds:
        def round_(per_write: float, writers: int) -> cases.ConcurrentWriters:
            return cases.ConcurrentWriters(per_write, _stats(per_write), writers, 800, 100)

        return cases.WriterRounds((round_(one, 1),), (round_(many, n),))

    def results(normal: cases.WriterRounds, full: cases.WriterRounds) -> limits.LimitsResults:
        return limits.LimitsResults(limits.LimitsSettings.quick(), 10e-6, {}, normal, full, {}, "PostgreSQL is not installed")

    good = results(writers(30e-6, 30e-6), writers(2e-3, 0.5e-3))
    assert [g.met for g in limits.writers_goals(good)] == [True, True]
    assert not limits.writers_explained(good)
    bad = results(writers(30e-6, 31e-6), writers(2e-3, 0.51e-3))
    assert [g.met for g in limits.writers_goals(bad)] == [False, False]
    assert limits.postgres_writers_goal(bad).met is None
    explained = limits.writers_explained(bad)
    assert [p.split(":")[0] for p in explained] == ["Not met on synchronous=NORMAL", 'Not met on synchronous="FULL"']


@pytest.mark.slow
def test_history_measures_every_case_at_two_tiny_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("agents")
    results = history.run(quick=True, sizes=(1000, 2000))
    for size in (1000, 2000):
        r = results[size]
        assert not [case for case, m in r.items() if "error" in m], r
        assert r["plain"]["messages"] == size and r["plain"]["compiled"] > 0
        assert r["readers"]["managers"] == history.READERS
        assert r["add"]["count"] == history.ADDS and r["compile"]["count"] == history.COMPILES
        assert r["wmany"]["managers"] == history.WRITE_READERS and r["w1"]["count"] == r["wmany"]["count"] == history.ADDS
        assert r["reader"]["rss_kib"] > 0 and r["peer"]["seconds"] > 0
    out = capsys.readouterr().out
    for line in (
        "sum(range(1000)) on this machine",
        "1k messages (store built in",
        "2k messages (store built in",
        "SQLiteSession open + get_items(limit=100)",
        "asides (reader ann) ÷ SQLiteSession",
        "50 readers ÷ one reader",
        "2k ÷ 1k",
        "Goals (issue 33, item 6)",
        "open + 1st compile @2k <",
        "50 readers @2k ≤ 2× one reader's resident growth",
        "add_message @2k, 200 reader managers open ≤ 1.3× with one",
    ):
        assert line in out, line


def test_history_goals_are_judged_as_the_issue_says() -> None:
    def size(open_s: float, rss_mb: float, compile_s: float, readers_mb: float, many_s: float = 1.2e-4) -> dict[str, dict[str, float]]:
        return {
            "reader": {"seconds": open_s, "rss_kib": rss_mb * 1024},
            "readers": {"rss_kib": readers_mb * 1024},
            "compile": {"mean_s": compile_s},
            "w1": {"mean_s": 1e-4},
            "wmany": {"mean_s": many_s},
        }

    # sum(range(1000)) at 31 µs: open + first compile under 3.1 s at the largest size
    good = history.goals({100: size(2.0, 100, 1e-3, 150), 1000: size(2.9, 120, 1.1e-3, 200)}, 31e-6)
    assert [g.met for g in good] == [True] * 8
    bad = history.goals({100: size(1.0, 100, 1e-3, 250), 1000: size(3.2, 400, 1.3e-3, 900, 1.4e-4)}, 31e-6)
    assert [g.met for g in bad] == [False] * 8
    failed = history.goals({100: size(1.0, 100, 1e-3, 150), 1000: {"reader": {"error": "killed by signal 9"}}}, 31e-6)
    assert [g.met for g in failed] == [None, None, None, None, None, None, True, None]


@pytest.mark.slow
def test_search_measures_every_goal_at_two_tiny_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    tiny = search.SearchSettings(sizes=(1000, 2000), searches=3, budget_s=0.0, scans=1, interval_s=0.0, idle_writes=5, writes=200, pairs=1)
    results = search.run(quick=True, settings=tiny)
    for size in (1000, 2000):
        r = results[size]
        assert not [step for step, m in r.items() if isinstance(m, dict) and "error" in m], r
        s = r["search"]
        assert s["rare_hits"] == search.rare_hits(size) == 1 and s["rare_candidates"] == 1 + (size > 25_000)
        assert s["common-ish_hits"] > 0 and s["rare_search"]["count"] == s["common-ish_search"]["count"] == 3
        assert s["rare_scan"]["count"] == 1 and s["unindexed"] < 1000
        x = r["index"]
        assert x["statements"]["count"] >= size // 1000 and x["idle"]["count"] == 5
    writes = results[2000]["writes"]
    assert [w["mode"] for w in writes] == ["off", "on"]
    assert writes[0]["add"]["count"] == 200 and writes[1]["add"]["count"] >= 200
    from asides.store._search import INDEX_EVERY

    # The window holds the indexing of what it wrote, give or take one batch written about its edges.
    assert abs(writes[1]["indexed"] - writes[1]["written"]) <= INDEX_EVERY
    out = capsys.readouterr().out
    for line in (
        "Search (reader ann, limit=10)",
        "rare: zephyr",
        "common-ish: deploy 421",
        "background build",
        "with ÷ without",
        "Goals (search)",
    ):
        assert line in out, line


def test_search_goals_are_judged_as_stated() -> None:
    def size(search_s: float, scan_s: float) -> dict[str, Any]:
        medians = {f"{name}_{what}": {"median": s} for name in search.QUERIES for what, s in (("search", search_s), ("scan", scan_s))}
        return {"search": medians}

    def large(search_s: float, scan_s: float, slowest: float, p99: float, on: float, off: float) -> dict[str, Any]:
        index = {"during": {"max": slowest, "p99": p99}, "idle": {"median": 0.3e-3}}
        writes = [{"mode": m, "total_s": t * 100, "add": {"count": 100}} for m, t in (("off", off), ("on", on))]
        return {**size(search_s, scan_s), "index": index, "writes": writes}

    good = search.goals({100: size(1e-3, 1.0), 1000: large(1.9e-3, 1.0, 0.5e-3, 0.4e-3, 1.2e-4, 1e-4)})
    assert [g.met for g in good] == [True] * 7
    bad = search.goals({100: size(1e-3, 1.0), 1000: large(2.1e-3, 0.04, 0.7e-3, 0.7e-3, 1.4e-4, 1e-4)})
    assert [g.met for g in bad] == [False] * 7


@pytest.mark.slow
def test_disclosures_open_a_store_compiled_after_every_message_in_fresh_processes(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import disclosures

    found = disclosures.measure_opens((60, 120))
    goal = disclosures.report_opens(found)
    out = capsys.readouterr().out
    assert [len(found[n]["opens"]) for n in (60, 120)] == [3, 3], out
    assert all(o["records"] == 0 and o["kept"] == 0 and 1 <= o["runs"] <= 120 for n in (60, 120) for o in found[n]["opens"])
    assert "0 records" in out and goal.goal.startswith("open at 120 within 1.5×")
