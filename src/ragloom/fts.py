"""BM25 keyword search with SQLite FTS5: the one implementation shared by the SQLite vector
store's ``text_search``/``hybrid`` modes and :class:`ragloom.retrievers.BM25Retriever`.

Layout: a node table (``id INTEGER PRIMARY KEY, node_id TEXT UNIQUE, ref_doc_id TEXT,
metadata BLOB /*JSONB*/, node TEXT /*node JSON*/``) and beside it a *contentless* FTS5
table (``content=''``, ``contentless_delete=1``) whose rowid is the node row's ``id`` and
whose one column holds :func:`keyword_text` of the node: its embed-visible metadata values and text run
through :func:`ragloom.analysis.analyze` (CJK unigrams + bigrams, stopword-free
Snowball-stemmed English words) joined by spaces.  FTS5's ``unicode61`` tokenizer then only
splits on those spaces, so index and query see exactly the analyzer's tokens.

Ranking is FTS5's built-in ``bm25()`` (Robertson/Spärck Jones Okapi BM25 with k1 = 1.2,
b = 0.75, ``idf = ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, lengths in tokens; see
https://www.sqlite.org/fts5.html#the_bm25_function).  A query matches nodes holding *any*
of its distinct analysed tokens (OR); scores are returned negated so that higher is better.
"""

from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence, Tuple

from ragloom.analysis import analyze, analyze_to_string
from ragloom.schema import BaseNode, MetadataMode

__all__ = [
    "FTS5_TOKENIZE",
    "keyword_text",
    "create_fts_table",
    "fill_fts_table",
    "KEYWORD_TEXT_VERSION",
    "match_expression",
    "keyword_search",
    "nodes_where",
]

#: FTS5 tokenizer over the analyzer's space-joined tokens (diacritics are kept as analysed).
FTS5_TOKENIZE = "unicode61 remove_diacritics 0"


#: Version of what :func:`keyword_text` puts in the index.  A table built by another version
#: is rebuilt from the stored nodes when it is opened (:func:`create_fts_table` says so).
KEYWORD_TEXT_VERSION = 2


def _metadata_words(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(_metadata_words(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return " ".join(_metadata_words(v) for v in value)
    return "" if value is None else str(value)


def keyword_text(node: BaseNode) -> str:
    """What the keyword index sees of ``node``: the *values* of the metadata the embed model
    sees, then the node's text, analysed and joined by single spaces.

    Metadata keys are left out on purpose: every file's node carries ``file_path: …``, so with
    keys the word *path* occurred in every node, its IDF fell to zero and the question "How do
    I declare a path parameter?" ranked FastAPI's ``path-params.md`` third; without them it
    is first (top-1 page on 16 FastAPI questions over ``docs/en``: 14 → 15, hybrid).
    """
    visible = node._visible_metadata(MetadataMode.EMBED)
    words = " ".join(_metadata_words(v) for v in visible.values())
    return analyze_to_string(words + "\n" + node.get_content(MetadataMode.NONE))


def create_fts_table(conn: Any, table: str) -> bool:
    """Create the contentless FTS5 table ``table`` on the apsw connection ``conn`` if missing.

    Returns ``True`` when the table is new — created now, or dropped and re-created because it
    was built by another :data:`KEYWORD_TEXT_VERSION` — so the caller must index its stored
    nodes into it (in the same transaction); ``False`` when it is current.
    """
    conn.execute("CREATE TABLE IF NOT EXISTS fts_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    exists = bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchall())
    row = conn.execute("SELECT version FROM fts_versions WHERE name = ?", (table,)).fetchall()
    if exists and row and int(row[0][0]) == KEYWORD_TEXT_VERSION:
        return False
    if exists:
        conn.execute(f'DROP TABLE "{table}"')
    conn.execute(
        f'CREATE VIRTUAL TABLE "{table}" USING fts5('
        f"tokens, content='', contentless_delete=1, tokenize='{FTS5_TOKENIZE}')"
    )
    conn.execute(
        "INSERT INTO fts_versions(name, version) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET version = excluded.version",
        (table, KEYWORD_TEXT_VERSION),
    )
    return True


def fill_fts_table(conn: Any, fts: str, nodes: str) -> int:
    """Index every node of the node table ``nodes`` into the (empty) FTS table ``fts``; the
    number of nodes indexed."""
    from ragloom.schema import node_from_json

    rows = conn.execute(f'SELECT id, node FROM "{nodes}"').fetchall()
    if rows:
        conn.executemany(
            f'INSERT INTO "{fts}"(rowid, tokens) VALUES (?, ?)',
            [(rowid, keyword_text(node_from_json(data))) for rowid, data in rows],
        )
    return len(rows)


def match_expression(query_str: str) -> Optional[str]:
    """The FTS5 ``MATCH`` expression for ``query_str``: its distinct analysed tokens, each
    quoted as a phrase, joined by ``OR``; ``None`` when the query has no token."""
    tokens = list(dict.fromkeys(analyze(query_str)))
    if not tokens:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)


def keyword_search(
    db: Any,
    fts: str,
    nodes: str,
    query_str: str,
    k: int,
    where: str = "1",
    params: Sequence[Any] = (),
) -> List[Tuple[str, str, float]]:
    """The ``k`` best BM25 matches of ``query_str`` as ``(node_id, node_json, score)``, best
    first (score = −``bm25()``, > 0).

    ``db`` is a :class:`~ragloom.storage.SQLiteDatabase`; ``fts`` the FTS5 table and ``nodes``
    the node table beside it; ``where``/``params`` an extra SQL condition over the node table
    aliased ``n`` (see :func:`nodes_where`).  Ties are broken by row id.
    """
    match = match_expression(query_str)
    if match is None or k <= 0:
        return []
    constraint = "" if where == "1" else f' AND f.rowid IN (SELECT n.id FROM "{nodes}" AS n WHERE {where})'
    sql = (
        f'SELECT n.node_id, n.node, -bm25("{fts}") AS score FROM "{fts}" AS f '
        f'JOIN "{nodes}" AS n ON n.id = f.rowid '
        f'WHERE "{fts}" MATCH ?{constraint} ORDER BY bm25("{fts}"), f.rowid LIMIT ?'
    )
    rows = db.execute(sql, [match, *params, int(k)])
    return [(r[0], r[1], float(r[2])) for r in rows]


def nodes_where(
    node_ids: Optional[Sequence[str]] = None,
    doc_ids: Optional[Sequence[str]] = None,
    filters: Any = None,
) -> Tuple[str, List[Any]]:
    """SQL condition over a node table aliased ``n`` restricting to ``node_ids``, to nodes whose
    ``ref_doc_id`` is in ``doc_ids`` and to ``filters`` (:class:`MetadataFilters`), all ANDed;
    ``("1", [])`` when nothing restricts."""
    parts: List[str] = []
    params: List[Any] = []
    if node_ids is not None:
        parts.append("n.node_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(node_ids)))
    if doc_ids is not None:
        parts.append("n.ref_doc_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(doc_ids)))
    if filters is not None:
        from ragloom.vector_stores.filters import filters_to_sql

        sql, fparams = filters_to_sql(filters, "n.metadata")
        parts.append(sql)
        params.extend(fparams)
    return (" AND ".join(parts) if parts else "1"), params
