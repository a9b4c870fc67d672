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
from typing import Any, Iterable, List, Optional, Sequence, Tuple

import msgspec

from ragloom.analysis import analyze, analyze_to_string
from ragloom.schema import BaseNode, MetadataMode

__all__ = [
    "FTS5_TOKENIZE",
    "keyword_text",
    "create_fts_table",
    "fill_fts_table",
    "create_node_table",
    "write_node_rows",
    "delete_node_rows",
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


def create_node_table(conn: Any, nodes: str) -> None:
    """Create the node table ``nodes`` (layout in the module docs) and its ``ref_doc_id`` index
    on the apsw connection ``conn`` if missing."""
    conn.execute(
        f"""
        CREATE TABLE IF NOT EXISTS "{nodes}" (
            id         INTEGER PRIMARY KEY,
            node_id    TEXT NOT NULL UNIQUE,
            ref_doc_id TEXT,
            metadata   BLOB NOT NULL,
            node       TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS "{nodes}_ref_doc" ON "{nodes}"(ref_doc_id);
        """
    )


def write_node_rows(
    conn: Any,
    nodes: str,
    fts: str,
    chunk: Sequence[BaseNode],
    replace: bool = True,
    rowid_tables: Iterable[str] = (),
) -> List[int]:
    """Upsert the node rows of ``chunk`` (distinct node ids) into ``nodes`` and their keyword
    rows into ``fts``, on ``conn`` inside the caller's transaction; the node rows' ids, in
    ``chunk`` order.

    With ``replace`` the rows keyed by these nodes' row ids are first deleted from ``fts`` and
    from each table of ``rowid_tables`` (e.g. the vector table, which the caller then refills);
    pass ``replace=False`` only when none of the node ids can be stored yet.  The node JSON is
    stored without the embedding.
    """
    if replace:
        ids_json = json.dumps([n.node_id for n in chunk])
        for table in (*rowid_tables, fts):
            conn.execute(
                f'DELETE FROM "{table}" WHERE rowid IN '
                f'(SELECT id FROM "{nodes}" WHERE node_id IN (SELECT value FROM json_each(?)))',
                (ids_json,),
            )
    encode = msgspec.json.encode
    rows = [
        (
            n.node_id,
            n.ref_doc_id,
            encode(n.metadata).decode("utf-8"),
            encode(msgspec.structs.replace(n, embedding=None)).decode("utf-8"),
        )
        for n in chunk
    ]
    rowids = [
        r[0]
        for r in conn.executemany(
            f'INSERT INTO "{nodes}"(node_id, ref_doc_id, metadata, node) '
            "VALUES (?, ?, jsonb(?), ?) ON CONFLICT(node_id) DO UPDATE SET "
            "ref_doc_id = excluded.ref_doc_id, metadata = excluded.metadata, node = excluded.node "
            "RETURNING id",
            rows,
        )
    ]
    conn.executemany(
        f'INSERT INTO "{fts}"(rowid, tokens) VALUES (?, ?)',
        [(rowid, keyword_text(chunk[i])) for i, rowid in enumerate(rowids)],
    )
    return rowids


def delete_node_rows(
    conn: Any, nodes: str, fts: str, where: str, params: Sequence[Any], rowid_tables: Iterable[str] = ()
) -> int:
    """Delete the rows of ``nodes`` matching ``where`` (SQL over ``nodes`` aliased ``n``, see
    :func:`nodes_where`) with their rows in each of ``rowid_tables`` and in ``fts``, on ``conn``
    inside the caller's transaction; the number of node rows deleted."""
    for table in (*rowid_tables, fts):
        conn.execute(f'DELETE FROM "{table}" WHERE rowid IN (SELECT id FROM "{nodes}" AS n WHERE {where})', params)
    conn.execute(f'DELETE FROM "{nodes}" AS n WHERE {where}', params)
    return int(conn.changes())


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
    # rank inside the FTS table first and join only the k winners: joining every match to its
    # node (JSON included) before sorting cost 2-2.5x more at 100,000 nodes (benchmarks/serve.py)
    sql = (
        f'SELECT n.node_id, n.node, s.score FROM '
        f'(SELECT f.rowid AS rid, -bm25("{fts}") AS score FROM "{fts}" AS f '
        f'WHERE "{fts}" MATCH ?{constraint} ORDER BY bm25("{fts}"), f.rowid LIMIT ?) AS s '
        f'JOIN "{nodes}" AS n ON n.id = s.rid ORDER BY s.score DESC, s.rid'
    )
    rows = db.execute(sql, [match, *params, int(k)])
    return [(r[0], r[1], float(r[2])) for r in rows]


def nodes_where(
    node_ids: Optional[Sequence[str]] = None,
    doc_ids: Optional[Sequence[str]] = None,
    filters: Any = None,
    leaf_sql: Any = None,
) -> Tuple[str, List[Any]]:
    """SQL condition over a node table aliased ``n`` restricting to ``node_ids``, to nodes whose
    ``ref_doc_id`` is in ``doc_ids`` and to ``filters`` (:class:`MetadataFilters`; ``leaf_sql``: see
    :func:`~ragloom.vector_stores.filters.filters_to_sql`), all ANDed; ``("1", [])`` when nothing
    restricts."""
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

        sql, fparams = filters_to_sql(filters, "n.metadata", leaf_sql)
        parts.append(sql)
        params.extend(fparams)
    return (" AND ".join(parts) if parts else "1"), params
