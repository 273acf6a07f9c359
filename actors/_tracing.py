"""Tracing through OpenTelemetry (the optional extra ``[otel]``): one span per compile, preview,
drain unit and model request.

Spans are named ``asides.compile``, ``asides.preview``, ``asides.drain_unit`` and
``asides.model_request`` and carry counts and names only, never content: ``asides.namespace``,
``asides.reader`` (``""`` for none), ``asides.branch``, ``asides.strategy``,
``asides.messages`` (messages compiled, or sent in a request), ``asides.tokens`` (the compile's
estimate, or a request's ``max_tokens``), ``asides.sources`` (view messages a request shows),
``asides.did_work`` (a drain unit) and ``asides.outcome`` (``ok``, ``cancelled``, or the name of
the error raised). The tracer is asked for at each span (``trace.get_tracer("asides")``), so a
tracer provider a host installs after importing asides is used. Without ``opentelemetry-api``
installed every span is a no-op that costs one function call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the extra is not installed
    _trace = None  # type: ignore[assignment]

__all__ = ["Span", "span", "tracing_available"]


def tracing_available() -> bool:
    """Whether ``opentelemetry-api`` is installed (spans are made)."""
    return _trace is not None


class Span:
    """What a traced block may add to its span: counts and names, never content."""

    __slots__ = ("_span",)

    def __init__(self, inner: Any) -> None:
        self._span = inner

    def set(self, name: str, value: str | int | bool) -> None:
        if self._span is not None:
            self._span.set_attribute(f"asides.{name}", value)


_NO_SPAN = Span(None)


@contextmanager
def span(name: str, *, namespace: str, reader: str | None, branch: str, strategy: str) -> Iterator[Span]:
    """A span ``asides.<name>`` around the block, its outcome set when the block ends."""
    if _trace is None:
        yield _NO_SPAN
        return
    attributes = {"asides.namespace": namespace, "asides.reader": reader or "", "asides.branch": branch, "asides.strategy": strategy}
    with _trace.get_tracer("asides").start_as_current_span(
        f"asides.{name}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as inner:
        wrapped = Span(inner)
        try:
            yield wrapped
        except anyio.get_cancelled_exc_class():
            wrapped.set("outcome", "cancelled")
            raise
        except BaseException as exc:
            wrapped.set("outcome", type(exc).__name__)
            inner.set_status(_trace.Status(_trace.StatusCode.ERROR))
            raise
        wrapped.set("outcome", "ok")
