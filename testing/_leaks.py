"""``LeakCheck``: find each reader's private markers wherever another reader could read them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from ..actors._compiled import CompiledContext, Provenance
from ..actors._manager import ContextEntry, ContextManager
from ..store._blocks import content_to_json
from ..strategies._base import CompiledMessage
from ..strategies._models import CompletionRequest
from ._errors import HarnessError, LeaksFound

__all__ = ["Leak", "LeakCheck"]

#: The name a manager with no reader goes by in reports.
NO_READER = "no reader"


@attrs.frozen
class Leak:
    """One hit: ``marker`` (meant for ``meant_for`` only) was found in something given to
    ``reached`` (a reader's name, or ``None`` for a manager with no reader), at ``where``;
    ``excerpt`` is the text around it."""

    marker: str
    meant_for: tuple[str, ...]
    reached: str | None
    where: str
    excerpt: str

    def __str__(self) -> str:
        reader = NO_READER if self.reached is None else self.reached
        return f"{self.marker} (for {', '.join(self.meant_for)}) reached {reader}'s {self.where}: …{self.excerpt}…"


@attrs.frozen
class _Haystack:
    reader: str | None
    where: str
    text: str


class LeakCheck:
    """Searches everything a reader was given for the markers meant for other readers.

    Give it, per reader, the marker strings meant for that reader: ``LeakCheck({"ann":
    ["ANN-SECRET"], "bob": ["BOB-SECRET"]})``, or add them one at a time with :meth:`add`
    (a marker meant for several readers lists them all). A marker found in anything given to a
    reader it is not meant for, or to a manager with no reader, is a :class:`Leak`.

    What it searches:

    - :meth:`scan` reads each manager it is given, through the public reads a host has: the
      compile it would return now (``preview_context``, which writes nothing) with its system
      injections and provenance (the reader's view of each raw source), its memories (every
      summary from ``get_summaries_in_range``, each again through ``get_summary``, and
      ``search_summaries`` for every marker), its context-log entries, and every request its
      model recorded (a :class:`ScriptedModel`, :class:`GatedModel`, :class:`FailingModel`,
      :class:`RecordingModel` or :class:`~asides.ExtractiveModel` keeps ``requests``). Scan
      while the runtime is open: a closed manager refuses reads.
    - :meth:`record` adds anything else a reader was given: the compiles a host made during a
      run, a model request, a summary, text.

    :meth:`leaks` reports every hit with where it was found; :meth:`assert_no_leaks` raises
    :class:`LeaksFound` listing them. A model shared by managers of different readers cannot say
    whose requests it holds, so :meth:`scan` refuses it (``HarnessError``): give each reader's
    manager its own model.
    """

    def __init__(self, markers: Mapping[str, Iterable[str]] | None = None) -> None:
        self._meant_for: dict[str, tuple[str, ...]] = {}
        self._haystacks: list[_Haystack] = []
        self._model_readers: dict[int, tuple[object, str | None]] = {}
        for reader, strings in (markers or {}).items():
            if isinstance(strings, str):
                raise HarnessError(f"LeakCheck: the markers of {reader!r} are a list of strings, not the string {strings!r}")
            for marker in strings:
                self.add(marker, (reader,))

    # -- what is secret ------------------------------------------------------------------------

    def add(self, marker: str, readers: Iterable[str]) -> None:
        """Say that ``marker`` is meant for ``readers`` (added to any readers it already has)."""
        if not isinstance(marker, str) or not marker:
            raise HarnessError(f"LeakCheck: a marker is a non-empty string, not {marker!r}")
        names = (readers,) if isinstance(readers, str) else tuple(readers)
        if not names or not all(isinstance(name, str) and name for name in names):
            raise HarnessError(f"LeakCheck: marker {marker!r} needs the names of the readers it is for, got {readers!r}")
        known = self._meant_for.get(marker, ())
        self._meant_for[marker] = known + tuple(name for name in dict.fromkeys(names) if name not in known)

    @property
    def markers(self) -> Mapping[str, tuple[str, ...]]:
        """Each marker and the readers it is meant for."""
        return dict(self._meant_for)

    # -- what readers were given ---------------------------------------------------------------

    def record(self, reader: str | None, material: object, *, where: str) -> None:
        """Add ``material``, given to ``reader`` (``None``: a manager with no reader), to what is
        searched, labelled ``where`` in reports. ``material`` may be a compile
        (:class:`~asides.CompiledContext`, searched with its system injections and provenance),
        a :class:`~asides.CompletionRequest`, a summary (its ``text``), a context-log entry,
        compiled messages, content blocks, or plain text."""
        if reader is not None and (not isinstance(reader, str) or not reader):
            raise HarnessError(f"LeakCheck.record: reader is a reader's name or None, not {reader!r}")
        if not isinstance(where, str) or not where:
            raise HarnessError("LeakCheck.record: where is a non-empty label, for example 'compile at turn 3'")
        for suffix, text in _texts(material):
            self._haystacks.append(_Haystack(reader, f"{where}{suffix}", text))

    async def scan(self, *managers: ContextManager) -> tuple[Leak, ...]:
        """Read each manager (see the class docstring), add what it holds to what is searched,
        and return :meth:`leaks`."""
        found: list[_Haystack] = []
        for manager in managers:
            reader = manager.view_reader
            place = manager.namespace if manager.branch == "main" else f"{manager.namespace} on {manager.branch}"
            model = manager.model
            requests = getattr(model, "requests", None)
            if requests is not None:
                self._claim_model(model, reader)
            preview = await manager.preview_context(max_tokens=10**9, reserve_for_response=0)
            found.extend(_Haystack(reader, f"{place} preview{suffix}", text) for suffix, text in _texts(preview))
            for summary in manager.get_summaries_in_range():
                label = f"{place} memory {getattr(summary, 'id', '?')}"
                found.extend(_Haystack(reader, label, text) for _, text in _texts(summary))
                summary_id = getattr(summary, "id", None)
                if isinstance(summary_id, str):
                    again = manager.get_summary(summary_id)
                    found.extend(_Haystack(reader, f"{label} (get_summary)", text) for _, text in _texts(again))
            for marker in self._meant_for:
                for summary in manager.search_summaries(re.escape(marker)):
                    label = f"{place} search_summaries({marker!r}) -> {getattr(summary, 'id', '?')}"
                    found.extend(_Haystack(reader, label, text) for _, text in _texts(summary))
            for entry in manager.get_context_entries():
                found.extend(_Haystack(reader, f"{place} context log entry {entry.index}", t) for _, t in _texts(entry))
            for number, request in enumerate(requests if requests is not None else (), start=1):
                found.extend(_Haystack(reader, f"{place} model request #{number}{s}", t) for s, t in _texts(request))
        self._haystacks.extend(found)
        return self.leaks()

    def _claim_model(self, model: object, reader: str | None) -> None:
        known = self._model_readers.get(id(model))
        if known is None:
            self._model_readers[id(model)] = (model, reader)
            return
        if known[1] != reader and getattr(model, "requests", None):
            names = " and ".join(NO_READER if r is None else repr(r) for r in (known[1], reader))
            raise HarnessError(
                f"LeakCheck.scan: the model {model!r} serves managers of {names}, so whose requests it recorded "
                "cannot be told; give each reader's manager its own model (open_manager(..., model=...))"
            )

    # -- results -------------------------------------------------------------------------------

    @property
    def places(self) -> int:
        """How many places (messages, memories, requests, texts) were searched."""
        return len(self._haystacks)

    def leaks(self) -> tuple[Leak, ...]:
        """Every marker found in something given to a reader it is not meant for, once per place."""
        hits: list[Leak] = []
        for marker, readers in self._meant_for.items():
            for hay in self._haystacks:
                if hay.reader in readers:
                    continue
                at = hay.text.find(marker)
                if at >= 0:
                    hits.append(Leak(marker, readers, hay.reader, hay.where, _excerpt(hay.text, at, len(marker))))
        return tuple(hits)

    def assert_no_leaks(self) -> None:
        """Raise :class:`LeaksFound` listing every leak, if there is one."""
        hits = self.leaks()
        if hits:
            raise LeaksFound(hits)


def _excerpt(text: str, at: int, length: int, context: int = 30) -> str:
    start, end = max(0, at - context), min(len(text), at + length + context)
    return " ".join(text[start:end].split())


def _strings(value: Any) -> Iterator[str]:
    """Every string value in a JSON value but the blocks' ``type`` tags, so markers are matched
    unescaped."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "type":
                yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _content_text(content: Any) -> str:
    return "\n".join(_strings(content_to_json(content)))


def _texts(material: object) -> Iterator[tuple[str, str]]:
    """``(label suffix, text)`` for each searchable part of ``material``."""
    if material is None:
        return
    if isinstance(material, str):
        yield "", material
    elif isinstance(material, CompiledContext):
        # One numbering for a compile: its messages from 1, in order; provenance names the
        # compiled message a source body stands behind, and the stored message's id beside it.
        for number, message in enumerate(material.messages, start=1):
            yield f", message {number}", _content_text(message.content)
        if material.system_injections:
            yield ", system injections", _content_text(material.system_injections)
        positions: dict[str, int] = {}
        for number, entry in enumerate(material.provenance.entries, start=1):
            for message_id in entry.message_ids:
                positions.setdefault(message_id, number)
        for message_id, body in material.provenance.raw_bodies.items():
            at = positions.get(message_id)
            where = f"message {at} (stored id {message_id})" if at is not None else f"stored message id {message_id}"
            yield f", provenance of {where}", _content_text(body)
    elif isinstance(material, Provenance):
        for message_id, body in material.raw_bodies.items():
            yield f", provenance of stored message id {message_id}", _content_text(body)
    elif isinstance(material, CompletionRequest):
        if material.system:
            yield ", system", material.system
        for number, message in enumerate(material.messages, start=1):
            yield f", message {number}", _content_text(message.content)
    elif isinstance(material, CompiledMessage | ContextEntry):
        yield "", _content_text(material.content)
    elif isinstance(getattr(material, "text", None), str):
        yield "", material.text  # type: ignore[attr-defined]
    elif isinstance(material, list | tuple):
        try:
            yield "", _content_text(material)
        except Exception:
            for number, item in enumerate(material, start=1):
                yield from ((f", item {number}{suffix}", text) for suffix, text in _texts(item))
    else:
        yield "", str(material)
