"""Full-text search over the log: the index each backend keeps, and the pure rules a search
answers by.

**The index** holds the text of every message record and edit record (its text blocks, and
tool results whose content is a string) as a row keyed by the record's id, naming the message
it is a version of; and the strings of every state record's value (:func:`state_text`), as a
row keyed by the record's id that names no message, so that a strategy finds its records that
may hold some words (a memory search) at the cost of those records, not of every key it has. An
index made before it held state records holds those from where it stood when it was brought up
to this form (``search_states``, ``search_states_from``), and the indexer, once caught up, adds
the earlier ones a batch at a time, backwards, noting how far down it got; until it gets to the
first record, such a store's strategies list their keys, as a store without an index does.
SQLite keeps it in an FTS5 table (``search``), PostgreSQL in a table of ``tsvector`` with a GIN
index (``asides_search``, the ``simple`` configuration: no stemming, no stop words, as FTS5's
``unicode61``).

It follows the log in batches, not write by write: a writing open's indexer indexes the records
after the last one indexed whenever :data:`INDEX_EVERY` of them are waiting, up to
:data:`BUILD_BATCH` in one statement (so a write pays none of it, and a batch costs what it
indexes, never the history), and keeps how far it got in the store. A store made before the
index was is indexed the same way, from its first record, in the background. A search also reads
the records the index has not reached yet (at most about :data:`INDEX_EVERY` once it has caught
up), so what it finds never waits for the indexer. An erasure's overwrite of a record takes the
record's row out in the same transaction (a trigger), so an erased line is never found again.

**The index knows no reader.** It finds candidates: the messages any version of which, on any
branch, holds every word of the query in any block. What a reader is answered is decided here,
from the reader's own view of each candidate (:func:`match`): a candidate the reader does not
see, or whose visible text does not hold every word, is dropped, and the score is computed from
that visible text alone (:func:`score`): BM25's term-frequency and length parts, over the
reader's hits. No weight comes from the index (an inverse document frequency would count other
readers' lines), so nothing in a reader's answer, its order included, depends on a line the
reader may not see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

from ._blocks import ContentBlock, TextBlock, ToolResultBlock

__all__ = [
    "BUILD_BATCH",
    "BUILD_STEP",
    "INDEX_EVERY",
    "MERGE_PAGES",
    "PG_BUILD_STATEMENT",
    "PG_SEARCH_SCHEMA",
    "SQLITE_SEARCH_SCHEMA",
    "Candidates",
    "SearchHit",
    "match",
    "query_words",
    "score",
    "holds_every",
    "searchable_text",
    "snippet",
    "state_text",
    "sqlite_build_statement",
    "sqlite_states_statement",
    "PG_STATES_STATEMENT",
    "sqlite_match_expression",
    "words",
]

#: Records indexed by one statement of the indexer (FTS5 costs about half as much a record in
#: batches of 1,000 as in batches of 200: docs/search.md).
BUILD_BATCH: Final = 1000
#: The indexer runs once this many records wait for it.
INDEX_EVERY: Final = 1000
#: Pages of the index one merge step of a store file's indexer writes at most (FTS5 ``merge``).
MERGE_PAGES: Final = 32
#: Records indexed by one statement while the indexer works through a backlog (a store made
#: before the index): small, so that a write waits for one step at most.
BUILD_STEP: Final = 32
#: BM25's usual constants.
_K1: Final = 1.2
_B: Final = 0.75
#: A hit's text is the whole visible text up to this many characters, else a snippet this long.
SNIPPET_CHARS: Final = 280

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words of ``text`` as the index tokenizes them: runs of letters and digits, case-folded."""
    return _WORD.findall(text.casefold())


def query_words(query: str) -> tuple[str, ...]:
    """The distinct words of a query, in order (a query is words; punctuation, quotes and
    operators are separators)."""
    return tuple(dict.fromkeys(words(query)))


@attrs.frozen
class SearchHit:
    """One thing a search found that its reader may see: a message (``kind="message"``, ``id``
    its id) or one of the namespace's memories (``kind="memory"``, ``id`` the summary's id).
    ``text`` is what the reader sees of it (a snippet around the first match when long);
    ``score`` ranks hits, higher first. ``sequence`` is the message's sequence (a memory's newest
    covered sequence), ``participant`` and ``timestamp`` the message's (``None`` for a memory);
    ``level`` a memory's level (``None`` for a message)."""

    kind: str
    id: str
    text: str
    score: float
    sequence: int
    participant: str | None = None
    timestamp: float | None = None
    level: int | None = None


@attrs.frozen
class Candidates:
    """What a journal's index says of a query: the ids of the messages some version of which
    may hold every word (``ids``), with those of the messages edited by a record it has not
    indexed yet (whose new text it cannot know), and the record ids it has not indexed yet
    (``unindexed``), which the store reads itself (``Store.search_candidates``)."""

    ids: frozenset[int]
    unindexed: range = range(0)


def searchable_text(content: Iterable[ContentBlock]) -> str:
    """The text a search reads of content: its text blocks and the tool results whose content is
    text, one per line (as the index indexes a record). Pass a reader's view of the content for
    what that reader may find."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolResultBlock) and isinstance(block.content, str):
            parts.append(block.content)
    return "\n".join(parts)


def state_text(value: Any) -> str:
    """The text a search reads of a state record's value: every string in it, at any depth (not
    the keys of its objects), one per line, as the index indexes a state record."""
    parts: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return "\n".join(parts)


def holds_every(text: str, query: Sequence[str]) -> bool:
    """Whether ``text`` holds every word of ``query``."""
    return match(text, query) is not None


def match(text: str, query: Sequence[str]) -> list[str] | None:
    """The words of ``text`` when it holds every word of ``query``, else ``None``."""
    found = words(text)
    present = set(found)
    return found if all(word in present for word in query) else None


def score(found: Sequence[str], query: Sequence[str], average_length: float) -> float:
    """BM25's term-frequency and length parts for a text whose words are ``found``, among hits
    of ``average_length`` words (see the module docstring: no index-wide weight)."""
    length = len(found) or 1
    norm = _K1 * (1 - _B + _B * length / (average_length or 1))
    total = 0.0
    for word in query:
        tf = found.count(word)
        total += tf * (_K1 + 1) / (tf + norm)
    return round(total, 6)


def snippet(text: str, query: Sequence[str]) -> str:
    """``text`` itself when short, else about :data:`SNIPPET_CHARS` characters around the first
    word of ``query`` it holds, with an ellipsis where cut."""
    if len(text) <= SNIPPET_CHARS:
        return text
    folded = text.casefold()
    first = min((m.start() for w in query for m in [re.search(rf"(?<![^\W_]){re.escape(w)}(?![^\W_])", folded)] if m), default=0)
    start = max(0, min(first - SNIPPET_CHARS // 3, len(text) - SNIPPET_CHARS))
    end = start + SNIPPET_CHARS
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


# -- SQLite ------------------------------------------------------------------------------------


def _sqlite_text(body: str) -> str:
    """The SQL expression of the indexed text of a record body (``NULL`` when none)."""
    return (
        "(SELECT group_concat(CASE json_extract(value, '$.type') "
        "WHEN 'text' THEN json_extract(value, '$.text') "
        "WHEN 'tool_result' THEN CASE json_type(value, '$.content') WHEN 'text' THEN json_extract(value, '$.content') END "
        f"END, char(10)) FROM json_each({body}, '$.content'))"
    )


def _sqlite_state_text(body: str) -> str:
    """The SQL expression of the indexed text of a state record's body: its strings."""
    return f"(SELECT group_concat(value, char(10)) FROM json_tree({body}) WHERE type = 'text')"


def _sqlite_message(row: str) -> str:
    return f"CASE {row}.kind WHEN 'message' THEN {row}.id WHEN 'edit' THEN CAST({row}.ref AS INTEGER) END"


#: The index of a store file: made by a writing open (each statement is idempotent).
SQLITE_SEARCH_SCHEMA: Final = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(body, message UNINDEXED, tokenize = 'unicode61 remove_diacritics 0', "
    "detail = none)",
    "CREATE TABLE IF NOT EXISTS search_build (next_id INTEGER NOT NULL)",
    # The first record from which state records are indexed (1 for an index made with them).
    "CREATE TABLE IF NOT EXISTS search_states (first_id INTEGER NOT NULL)",
    # Segments are merged by the indexer, a bounded step at a time (MERGE_PAGES), never by an
    # insert that happens to cross a threshold: no statement of the indexer runs long.
    "INSERT INTO search (search, rank) VALUES ('automerge', 0)",
    "INSERT INTO search (search, rank) VALUES ('crisismerge', 64)",
    "CREATE TRIGGER IF NOT EXISTS search_rewritten AFTER UPDATE OF body ON log BEGIN DELETE FROM search WHERE rowid = old.id; END",
)


def sqlite_build_statement() -> str:
    """One batch of a store file's indexer: the records with ids in ``[?, ?]`` not indexed yet
    (so a batch run twice indexes nothing twice)."""
    return (
        "INSERT INTO search (rowid, body, message) SELECT id, t, m FROM (SELECT log.id AS id, "
        f"CASE log.kind WHEN 'state' THEN {_sqlite_state_text('log.body')} ELSE {_sqlite_text('log.body')} END AS t, "
        f"{_sqlite_message('log')} AS m FROM log WHERE log.id BETWEEN ? AND ? AND log.kind IN ('message', 'edit', 'state') "
        "AND json_valid(log.body) AND log.id NOT IN (SELECT rowid FROM search WHERE rowid BETWEEN ? AND ?)) "
        "WHERE t IS NOT NULL AND t != ''"
    )


def sqlite_states_statement() -> str:
    """One batch of a store file's indexer adding the state records with ids in ``[?, ?]`` that an
    index made before it held them lacks (``+kind``: through the ids, never an index by kind)."""
    return (
        f"INSERT INTO search (rowid, body, message) SELECT id, t, NULL FROM (SELECT log.id AS id, {_sqlite_state_text('log.body')} "
        "AS t FROM log WHERE log.id BETWEEN ? AND ? AND +log.kind = 'state' AND json_valid(log.body) "
        "AND log.id NOT IN (SELECT rowid FROM search WHERE rowid BETWEEN ? AND ?)) WHERE t IS NOT NULL AND t != ''"
    )


def sqlite_match_expression(query: Sequence[str]) -> str:
    """An FTS5 query holding every word (each quoted: nothing in a word is an operator)."""
    return " ".join(f'"{word}"' for word in query)


# -- PostgreSQL --------------------------------------------------------------------------------

#: The index of a PostgreSQL store: made by a writing open in the store's schema (idempotent).
PG_SEARCH_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS asides_search (id bigint PRIMARY KEY, message bigint NOT NULL, words tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS asides_search_words ON asides_search USING gin (words)",
    # A state record's row names no message (an index made before it held them: from NOT NULL).
    "ALTER TABLE asides_search ALTER COLUMN message DROP NOT NULL",
    """CREATE OR REPLACE FUNCTION asides_state_text(body text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE doc jsonb; found text;
BEGIN
  BEGIN doc := body::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END;
  SELECT string_agg(v #>> '{}', E'\\n') INTO found FROM jsonb_path_query(doc, 'strict $.**') AS v WHERE jsonb_typeof(v) = 'string';
  RETURN found;
END $$""",
    """CREATE OR REPLACE FUNCTION asides_search_text(body text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE doc jsonb; found text;
BEGIN
  BEGIN doc := body::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END;
  IF jsonb_typeof(doc) IS DISTINCT FROM 'object' OR jsonb_typeof(doc->'content') IS DISTINCT FROM 'array' THEN RETURN NULL; END IF;
  SELECT string_agg(CASE b->>'type' WHEN 'text' THEN b->>'text'
    WHEN 'tool_result' THEN CASE WHEN jsonb_typeof(b->'content') = 'string' THEN b->>'content' END END, E'\\n')
    INTO found FROM jsonb_array_elements(doc->'content') AS b WHERE jsonb_typeof(b) = 'object';
  RETURN found;
END $$""",
    """CREATE OR REPLACE FUNCTION asides_search_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM asides_search WHERE id = OLD.id;
  RETURN NULL;
END $$""",
    "DROP TRIGGER IF EXISTS asides_search_forget ON asides_log",
    "CREATE TRIGGER asides_search_forget AFTER UPDATE OF body ON asides_log FOR EACH ROW EXECUTE FUNCTION asides_search_forget()",
)

#: One batch of a PostgreSQL store's indexer (ids in ``[%s, %s]``; idempotent).
PG_BUILD_STATEMENT: Final = (
    "INSERT INTO asides_search (id, message, words) "
    "SELECT id, CASE kind WHEN 'message' THEN id WHEN 'edit' THEN ref::bigint END, to_tsvector('simple', t) FROM "
    "(SELECT id, kind, ref, CASE kind WHEN 'state' THEN asides_state_text(body) ELSE asides_search_text(body) END AS t "
    "FROM asides_log WHERE id BETWEEN %s AND %s AND kind IN ('message', 'edit', 'state')) AS indexed "
    "WHERE t IS NOT NULL AND t <> '' ON CONFLICT (id) DO NOTHING"
)

#: One batch of a PostgreSQL store's indexer adding the state records with ids in ``[%s, %s]``
#: that an index made before it held them lacks (idempotent).
PG_STATES_STATEMENT: Final = (
    "INSERT INTO asides_search (id, message, words) SELECT id, NULL, to_tsvector('simple', t) FROM "
    "(SELECT id, asides_state_text(body) AS t FROM asides_log WHERE id BETWEEN %s AND %s AND kind || '' = 'state') AS indexed "
    "WHERE t IS NOT NULL AND t <> '' ON CONFLICT (id) DO NOTHING"
)
