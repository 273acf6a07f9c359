"""A compile's tokens by part, worked out from the previous compile's when it only added messages,
are those worked out afresh, over any run of compiles (pure core: ``AssemblyCache.sent``)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from asides.actors._compiled import AssemblyCache, CompiledContext, Provenance
from asides.store import text
from asides.strategies._base import CompiledMessage, SourceEntry

KINDS = ("raw", "raw", "raw", "summary", "injection", "repair")


def _estimate(content) -> int:
    return sum(len(block.text) for block in content)


def _level(summary_id: str | None) -> int:
    return int(summary_id or "0") % 3


# One compile: keep how many of the previous compile's messages (a growth keeps them all), then
# add some, each (kind, text length); and whether the system content changes.
compiles = st.lists(
    st.tuples(
        st.one_of(st.just(None), st.integers(0, 12)),
        st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 40)), max_size=8),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=400)
@given(compiles)
@example([(None, [("raw", 1)], False), (None, [("raw", 1)], False), (None, [("summary", 1)], False)])  # no memory, then one
def test_parts_worked_out_from_the_previous_compile_are_those_worked_out_afresh(runs):
    kept_cache = AssemblyCache()
    messages: list[CompiledMessage] = []
    entries: list[SourceEntry] = []
    system = (text("system"),)
    made = 0
    previous: CompiledContext | None = None
    for keep, added, new_system in runs:
        if keep is not None:
            del messages[keep:], entries[keep:]
        for kind, length in added:
            made += 1
            messages.append(CompiledMessage("user", (text("x" * length),)))
            entries.append(SourceEntry(kind, (str(made),), str(made) if kind == "summary" else None))
        if new_system:
            system = (text(f"system {made}"),)
        compiled = CompiledContext(tuple(messages), system, Provenance(tuple(entries)), 0)
        parts, cached = kept_cache.sent(compiled, _estimate, _level)
        assert parts == AssemblyCache().sent(compiled, _estimate, _level)[0]  # a first compile: afresh
        expected = 0
        if previous is not None and previous.system_injections == system:
            expected = _estimate(system)
            for before, now in zip(previous.messages, compiled.messages, strict=False):
                if before != now:
                    break
                expected += _estimate(now.content)
        assert cached == expected
        previous = compiled
