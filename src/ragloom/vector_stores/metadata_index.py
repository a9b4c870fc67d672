"""An index of the nodes' top-level metadata values, so that a selective filter does not read every row.

Without it a metadata filter is ``json_extract(n.metadata, '$."key"') <op> ?`` evaluated on every
node row (about 35 ms per 100,000 rows): fine for checking a few candidate rows, slow for finding
the 1% of a million rows that match.

**Table.** ``vs_<c>_metadata_index(key TEXT, value, node_rowid, PRIMARY KEY (key, value,
node_rowid)) WITHOUT ROWID``: one row per top-level metadata key of each node, ``value`` being what
``json_each`` gives for it, which is exactly ``json_extract(metadata, '$."key"')`` (same SQL type:
JSON true/false as 1/0, containers as their JSON text).  Keys whose value is JSON ``null``, and text
values (or containers) longer than :data:`MAX_TEXT_CHARS` characters (a ``window`` of sentences, a
long title), are left out.  Triggers on the node table keep it in the writing transaction, whatever
code path writes (the same pattern as the ANN change log).  A new store creates it empty; an
existing store without it is indexed by :meth:`SQLiteVectorStore.optimize
<ragloom.vector_stores.sqlite.SQLiteVectorStore.optimize>` (``ragloom index`` and ``ragloom
optimize`` call it), in one transaction, and until then filters take the per-row path.

**Which filters.** ``==`` and ``in`` whose operands are numbers, bools or strings of at most
:data:`MAX_TEXT_CHARS` characters, and ``>``, ``<``, ``>=``, ``<=`` with a number or bool (a
string range could reach left-out long strings).  ``!=``, ``nin``, ``contains``, ``text_match``
and string ranges always take the per-row path.  Each such leaf, ``json_extract(...) = ?``, is
equivalent to ``n.id IN (SELECT node_rowid FROM index WHERE key = ? AND value = ?)`` on every row,
so swapping one for the other never changes a result.

**When to use it** (:func:`plan`).  The index form is fast for *enumerating* few rows, slow as a
per-row test (SQLite materialises the whole sub-select first), and enumerating many rows through it
costs more than a scan (about 1.6 µs per matching row against 0.4 µs per scanned row).  So a plan
drives a filter through the index only when that yields at most :data:`DRIVE_FRACTION` of the rows,
counted exactly (a ``LIMIT``-bounded count of index entries): in an AND group one leaf (the fewest
rows) drives and the others are checked per row on its rows; an OR group drives only when all of its
members do.  Everything else keeps the per-row form.  Filters combined with ``node_ids`` or
``doc_ids`` (already small sets with their own indexes) are not driven.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ragloom.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

__all__ = ["MAX_TEXT_CHARS", "DRIVE_FRACTION", "FilterPlan", "build", "consistent", "create", "exists", "plan",
           "restrict", "servable", "table_name"]

#: Text values (and containers' JSON) longer than this are not indexed; a filter on a longer string
#: takes the per-row path.
MAX_TEXT_CHARS = 256
#: A filter is driven through the index when it matches at most this fraction of the rows (counted
#: against the largest node row id, an upper bound of the row count).
DRIVE_FRACTION = 0.05

_NUMERIC = (int, float)  # bool is an int
_RANGE = {FilterOperator.GT: ">", FilterOperator.GTE: ">=", FilterOperator.LT: "<", FilterOperator.LTE: "<="}
#: the json_each rows that are indexed (alias j): a top-level member, not null, short enough
_INDEXED = (
    f"typeof(j.key) = 'text' AND j.type <> 'null' AND "
    f"(j.type IN ('integer', 'real', 'true', 'false') OR length(j.value) <= {MAX_TEXT_CHARS})"
)


def table_name(collection: str) -> str:
    return f"vs_{collection}_metadata_index"


def exists(conn: Any, table: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchall())


def create(conn: Any, nodes: str, table: str) -> int:
    """Create the index table and its triggers on the node table ``nodes`` and index every stored
    node (call inside a write transaction); the number of index rows written (0 when it existed)."""
    if exists(conn, table):
        return 0
    conn.execute(
        f'CREATE TABLE "{table}" (key TEXT NOT NULL, value NOT NULL, node_rowid INTEGER NOT NULL, '
        "PRIMARY KEY (key, value, node_rowid)) WITHOUT ROWID"
    )

    def add(row: str) -> str:
        return (f'INSERT OR IGNORE INTO "{table}"(key, value, node_rowid) '
                f"SELECT j.key, j.value, {row}.id FROM json_each({row}.metadata) AS j WHERE {_INDEXED};")

    def remove(row: str) -> str:
        # by primary key, from the old metadata (no index on node_rowid is needed)
        return (f'DELETE FROM "{table}" WHERE (key, value, node_rowid) IN '
                f"(SELECT j.key, j.value, {row}.id FROM json_each({row}.metadata) AS j WHERE {_INDEXED});")

    conn.execute(f'CREATE TRIGGER "{table}_insert" AFTER INSERT ON "{nodes}" BEGIN {add("NEW")} END')
    conn.execute(f'CREATE TRIGGER "{table}_delete" AFTER DELETE ON "{nodes}" BEGIN {remove("OLD")} END')
    conn.execute(f'CREATE TRIGGER "{table}_update" AFTER UPDATE OF id, metadata ON "{nodes}" '
                 f'BEGIN {remove("OLD")} {add("NEW")} END')
    conn.execute(f'INSERT OR IGNORE INTO "{table}"(key, value, node_rowid) '
                 f'SELECT j.key, j.value, n.id FROM "{nodes}" AS n, json_each(n.metadata) AS j WHERE {_INDEXED}')
    return int(conn.changes())


def build(db: Any, nodes: str, table: str) -> Optional[Dict[str, Any]]:
    """:func:`create` in its own transaction; ``{"rows", "seconds"}``, or ``None`` when it existed."""
    t0 = time.perf_counter()
    if exists(db.connection, table):  # the usual case: no write transaction
        return None
    with db.transaction():
        if exists(db.connection, table):
            return None
        rows = create(db.connection, nodes, table)
    return {"rows": rows, "seconds": round(time.perf_counter() - t0, 3)}


def consistent(conn: Any, nodes: str, table: str) -> bool:
    """Whether ``table`` holds exactly the index rows of the nodes stored now (a check for tests and
    for debugging; reads every node)."""
    expected = (f'SELECT j.key, j.value, n.id FROM "{nodes}" AS n, json_each(n.metadata) AS j '
                f"WHERE {_INDEXED}")
    stored = f'SELECT key, value, node_rowid FROM "{table}"'
    diff = conn.execute(f"SELECT count(*) FROM ({expected} EXCEPT {stored}) UNION ALL "
                        f"SELECT count(*) FROM ({stored} EXCEPT {expected})").fetchall()
    return all(int(r[0]) == 0 for r in diff)


def servable(f: MetadataFilter) -> bool:
    """Whether the index answers ``f`` exactly (see the module docs)."""
    if not isinstance(f.key, str) or '"' in f.key or "\\" in f.key:
        return False  # the per-row compiler refuses such keys; let it
    op = FilterOperator(f.operator)

    def short(v: Any) -> bool:
        return isinstance(v, _NUMERIC) or (isinstance(v, str) and len(v) <= MAX_TEXT_CHARS)

    if op == FilterOperator.EQ:
        return short(f.value)
    if op == FilterOperator.IN:
        return all(short(v) for v in f.value)
    if op in _RANGE:
        return isinstance(f.value, _NUMERIC)
    return False


def _condition(f: MetadataFilter, params: List[Any]) -> str:
    """The index rows of the nodes matching the servable ``f``, as SQL over the index table."""
    op = FilterOperator(f.operator)
    if op == FilterOperator.EQ:
        params.extend([f.key, f.value])
        return "key = ? AND value = ?"
    if op == FilterOperator.IN:
        params.extend([f.key, json.dumps(list(f.value))])  # as the per-row form passes them
        return "key = ? AND value IN (SELECT value FROM json_each(?))"
    params.extend([f.key, f.value])
    # numbers sort below every text value: bound '>' ranges by the smallest text, ''
    upper = " AND value < ''" if op in (FilterOperator.GT, FilterOperator.GTE) else ""
    return f"key = ? AND value {_RANGE[op]} ?{upper}"


def _count(conn: Any, table: str, f: MetadataFilter, limit: int) -> int:
    params: List[Any] = []
    cond = _condition(f, params)
    sql = f'SELECT count(*) FROM (SELECT 1 FROM "{table}" WHERE {cond} LIMIT ?)'
    return int(conn.execute(sql, [*params, limit]).fetchall()[0][0])


@dataclass
class FilterPlan:
    """The SQL restricting a query to its node rows (over the node table aliased ``n``), in two forms:
    ``where`` tests one row at a time (cheap on a few candidate rows); ``set_where`` enumerates every
    matching row, through the metadata index when a plan drives it.  ``ids_sql`` selects the matching
    row ids (straight from the index when the filter is driven leaves only, else ``SELECT n.id ...
    WHERE set_where``).  ``rows``: how many rows the driven filter matches at most, when the index
    counted them (``None``: not driven)."""

    where: str
    params: List[Any]
    set_where: str = ""
    set_params: List[Any] = field(default_factory=list)
    rows: Optional[int] = None
    ids_sql: str = ""
    ids_params: List[Any] = field(default_factory=list)

    @classmethod
    def unplanned(cls, nodes: str, where: str, params: List[Any]) -> "FilterPlan":
        """The per-row form everywhere."""
        return cls(where, params, where, list(params), None, f'SELECT n.id FROM "{nodes}" AS n WHERE {where}',
                   list(params))


def plan(conn: Any, nodes: str, table: str, filters: MetadataFilters) -> Tuple[Set[int], Optional[int]]:
    """The leaves of ``filters`` (by ``id()``) to drive through the index ``table`` and how many rows
    they yield, or ``(set(), None)`` when driving would not pay (see the module docs)."""
    top = conn.execute(f'SELECT max(id) FROM "{nodes}"').fetchall()[0][0]
    if not top:
        return set(), None
    cap = max(1, int(DRIVE_FRACTION * int(top)))

    def visit(node: Any, limit: int) -> Optional[Tuple[int, Set[int]]]:
        if isinstance(node, MetadataFilter):
            if not servable(node):
                return None
            n = _count(conn, table, node, limit + 1)
            return None if n > limit else (n, {id(node)})
        if not node.filters:
            return None  # matches everything
        if node.condition == FilterCondition.AND:
            best: Optional[Tuple[int, Set[int]]] = None
            for child in node.filters:
                got = visit(child, limit if best is None else best[0])
                if got is not None and (best is None or got[0] < best[0]):
                    best = got
            return best
        total, leaves = 0, set()
        for child in node.filters:
            got = visit(child, limit - total)
            if got is None:
                return None
            total += got[0]
            leaves |= got[1]
        return total, leaves

    found = visit(filters, cap)
    return (set(), None) if found is None else (found[1], found[0])


def leaf_sql(table: str, driven: Set[int]) -> Callable[[MetadataFilter, List[Any]], Optional[str]]:
    """A hook for :func:`~ragloom.vector_stores.filters.filters_to_sql`: the index form of the leaves
    in ``driven`` (``None`` for the others, which keep the per-row form)."""

    def compile_leaf(f: MetadataFilter, params: List[Any]) -> Optional[str]:
        if id(f) not in driven:
            return None
        cond = _condition(f, params)
        return f'(n.id IN (SELECT node_rowid FROM "{table}" WHERE {cond}))'

    return compile_leaf


def _ids_only(table: str, node: Any, driven: Set[int], params: List[Any]) -> Optional[str]:
    """The row ids matching ``node`` read from the index alone, when every leaf of it is driven and
    no AND has to combine them (a leaf, or ORs of them: a ``UNION``); else ``None``."""
    if isinstance(node, MetadataFilter):
        return f'SELECT node_rowid FROM "{table}" WHERE {_condition(node, params)}' if id(node) in driven else None
    if len(node.filters) == 1:
        return _ids_only(table, node.filters[0], driven, params)
    if node.condition != FilterCondition.OR or not node.filters:
        return None
    parts = []
    for child in node.filters:
        part = _ids_only(table, child, driven, params)
        if part is None:
            return None
        parts.append(part)
    return " UNION ".join(parts)


def restrict(conn: Any, nodes: str, table: Optional[str], node_ids: Optional[Sequence[str]],
             doc_ids: Optional[Sequence[str]], filters: Optional[MetadataFilters]) -> FilterPlan:
    """The :class:`FilterPlan` of a query's restrictions (``table``: the index, ``None`` when absent)."""
    from ragloom.fts import nodes_where

    where, params = nodes_where(node_ids=node_ids, doc_ids=doc_ids, filters=filters)
    if table is None or filters is None or node_ids is not None or doc_ids is not None:
        return FilterPlan.unplanned(nodes, where, params)
    driven, rows = plan(conn, nodes, table, filters)
    if not driven:
        return FilterPlan.unplanned(nodes, where, params)
    set_where, set_params = nodes_where(filters=filters, leaf_sql=leaf_sql(table, driven))
    ids_params: List[Any] = []
    ids_sql = _ids_only(table, filters, driven, ids_params)
    if ids_sql is None:
        ids_sql, ids_params = f'SELECT n.id FROM "{nodes}" AS n WHERE {set_where}', list(set_params)
    return FilterPlan(where, params, set_where, set_params, rows, ids_sql, ids_params)
