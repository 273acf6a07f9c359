"""The context log of a runtime's namespaces, a part the runtime's core owns: each namespace's
entries on each branch (``append_context_entry``, ``get_context_entries``), and the index of the
entries that copy a message, so that an edit of the message rewrites its copies.

The managers ask it (through ``RuntimeCore.context_log``); the core tells it of an entry another
process wrote (:meth:`ContextLog.note_written_elsewhere`).
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from ..store._blocks import content_to_json, decode_stored_content
from ..store._messages import Message
from ..store._model import MISSING
from ..store._store import Store
from ..store._views import reader_view
from ._records import CONTEXT, NAMESPACE_KEYS, context_index, context_key, context_prefix, own_record, reader_of
from ._values import ContextEntry

__all__ = ["ContextLog"]

log = logging.getLogger("asides.actors")


class ContextLog:
    """The context log of one runtime's store (see the module docstring). The index of copies
    is built per branch from the store when first needed, and kept up to date from then on."""

    def __init__(self, store: Store) -> None:
        self._store = store
        #: Per branch: the keys of the entries copying each message, by message id.
        self._copies: dict[str, dict[str, list[str]]] = {}

    def _copy_index(self, branch: str) -> dict[str, list[str]]:
        index = self._copies.get(branch)
        if index is None:
            index = {}
            model = self._store.model
            owned = ((key, own_record(key)) for key in model.state_keys_containing(branch, f"/{CONTEXT}/"))
            entries = [key for key, found in owned if found is not None and found[1] not in NAMESPACE_KEYS]
            for key, value in model.get_states(branch, entries).items():  # read together, not one by one
                source = _copied(value)
                if source is not None:
                    index.setdefault(source, []).append(key)
            self._copies[branch] = index
        return index

    def note_written_elsewhere(self, branch: str, key: str) -> None:
        """Index a context-log entry another process wrote, if it copies a message: this
        process's edits of that message rewrite it too."""
        index = self._copies.get(branch)
        if index is None:
            return  # built from the model when first needed
        source = _copied(self._store.model.get_state(branch, key))
        if source is not None:
            keys = index.setdefault(source, [])
            if key not in keys:
                keys.append(key)

    async def write(self, branch: str, namespace: str, entry: ContextEntry) -> None:
        """Write ``entry`` of ``namespace``'s context log on ``branch`` (and index it when it
        copies a message)."""
        key = context_key(namespace, entry.index)
        value = {"content": content_to_json(entry.content), "source_message_id": entry.source_message_id}
        if entry.source_message_id is not None:
            self._copy_index(branch).setdefault(entry.source_message_id, []).append(key)
        await self._store.set_state(branch, key, value)

    def entries(self, branch: str, namespace: str) -> tuple[ContextEntry, ...]:
        """``namespace``'s context log on ``branch``, oldest first, read fail-closed."""
        prefix = context_prefix(namespace)
        entries = []
        for key, value in self._store.model.state_items(branch, prefix).items():
            rest = key[len(prefix) :]
            index = context_index(rest)
            if index is None:
                if rest.isdigit():  # ``²``, ``07``: digits, but no context index (actors._records)
                    log.warning("state %r on %r is no context entry (its index is not ASCII decimal); read fail-closed", key, branch)
                continue
            if not isinstance(value, dict):
                continue
            content, problems = decode_stored_content(value.get("content"))
            if problems:
                log.warning("context entry %s on %r is malformed, read fail-closed: %s", key, branch, problems)
            source = value.get("source_message_id")
            entries.append(ContextEntry(index, content, source if isinstance(source, str) else None))
        entries.sort(key=lambda e: e.index)
        return tuple(entries)

    def rewrites(self, branch: str, message_id: str, stored: Message, content: tuple[Any, ...]) -> dict[str, Any]:
        """The rewrites an edit makes to context-log copies of ``message_id`` on ``branch``: each
        as its namespace's reader sees the new content, dropped (``None``) where it sees nothing."""
        rewrites: dict[str, Any] = {}
        edited = attrs.evolve(stored, content=content)
        for key in self._copy_index(branch).get(message_id, ()):
            if self._store.model.get_state(branch, key) in (None, MISSING):
                continue
            owned = own_record(key)
            if owned is None:
                continue
            readable, reader = reader_of(self._store.model, branch, owned[0])
            if not readable:
                rewrites[key] = None  # whose view it holds cannot be told: fail closed
                continue
            seen, _ = reader_view(edited, reader)
            rewrites[key] = None if seen is None else {"content": content_to_json(seen.content), "source_message_id": message_id}
        return rewrites


def _copied(value: object) -> str | None:
    """The id of the message a context-log entry's stored ``value`` copies, if it copies one."""
    source = value.get("source_message_id") if isinstance(value, dict) else None
    return source if isinstance(source, str) else None
