"""Tracing (issue 23, the ``[otel]`` extra): spans for compile, preview, drain unit and model
request, with counts and names but never content, read with the SDK's in-memory exporter."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from asides.actors import open_runtime  # noqa: E402
from asides.store import TextBlock, text  # noqa: E402
from asides.strategies import AutobiographicalStrategy, ExtractiveModel  # noqa: E402

SECRET = "heron-vault-5521"
BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.setattr(trace, "get_tracer", lambda *a, **k: _PROVIDER.get_tracer(*a, **k))
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def tok(content: Any) -> int:
    return sum(len(b.text) for b in content if isinstance(b, TextBlock)) or 10


async def test_spans_carry_counts_never_content(store_path: str, spans: InMemorySpanExporter) -> None:
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=80, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0, estimator=tok
    )
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        m = await rt.open_manager("agents/ann", strategy=strategy, view_reader="ann")
        for i in range(10):
            await m.add_message("user", [text(f"line {i} {SECRET} of the talk")])
        await m.preview_context(**BIG)
        await m.drain()
        compiled = await m.compile(**BIG)
    finished = spans.get_finished_spans()
    names = {s.name for s in finished}
    assert {"asides.compile", "asides.preview", "asides.drain_unit", "asides.model_request"} <= names
    (compile_span,) = [s for s in finished if s.name == "asides.compile"]
    attributes = dict(compile_span.attributes or {})
    assert attributes["asides.namespace"] == "agents/ann" and attributes["asides.reader"] == "ann"
    assert attributes["asides.branch"] == "main" and attributes["asides.strategy"] == "autobiographical"
    assert attributes["asides.messages"] == len(compiled.messages) and attributes["asides.tokens"] == compiled.token_estimate
    assert attributes["asides.outcome"] == "ok"
    request = next(s for s in finished if s.name == "asides.model_request")
    assert request.attributes["asides.sources"] > 0 and request.attributes["asides.outcome"] == "ok"
    assert SECRET not in repr([(s.name, dict(s.attributes or {}), [e.attributes for e in s.events]) for s in finished])


async def test_a_search_span_counts_what_it_returned_never_the_query_or_the_lines(store_path: str, spans: InMemorySpanExporter) -> None:
    from asides.strategies import PassthroughStrategy

    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await host.add_message("user", [text(f"the {SECRET} is here")])
        await host.add_message("user", [text(f"the {SECRET} for bob", ["bob"])])
        hits = await ann.search(SECRET)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "asides.search"]
    attributes = dict(span.attributes or {})
    assert attributes["asides.namespace"] == "agents/ann" and attributes["asides.reader"] == "ann"
    assert attributes["asides.hits"] == len(hits) == 1 and attributes["asides.messages"] == 1
    assert attributes["asides.outcome"] == "ok"
    assert SECRET.split("-")[0] not in repr(attributes)


async def test_a_refused_compile_says_so(store_path: str, spans: InMemorySpanExporter) -> None:
    from asides.actors import InvalidArgumentError
    from asides.strategies import PassthroughStrategy

    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        with pytest.raises(InvalidArgumentError):
            await m.compile(max_tokens=-1)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "asides.compile"]
    assert span.attributes["asides.outcome"] == "InvalidArgumentError"


def test_no_op_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import asides.actors._tracing as tracing

    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    reloaded = importlib.reload(tracing)
    try:
        assert not reloaded.tracing_available()
        with reloaded.span("compile", namespace="n", reader=None, branch="main", strategy="s") as traced:
            traced.set("messages", 1)
    finally:
        monkeypatch.delitem(sys.modules, "opentelemetry")
        importlib.reload(tracing)
