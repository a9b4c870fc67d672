"""Metadata filters: compiled to SQL for SQLite stores, or evaluated in Python.

Both follow the semantics documented in :mod:`ragloom.vector_stores.types`, so a
backend that evaluates filters itself and one that pushes them into SQL return
the same nodes.
"""

from __future__ import annotations

import json
import operator
from typing import Any, Callable, List, Mapping, Optional, Tuple

from ragloom.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

__all__ = ["filters_to_sql", "metadata_matches", "check_filter_scalar"]

_SQL_CMP = {
    FilterOperator.GT: ">",
    FilterOperator.LT: "<",
    FilterOperator.GTE: ">=",
    FilterOperator.LTE: "<=",
}

_Scalar = (str, int, float, bool)


def _json_path(key: str) -> str:
    # a quoted member name: keys may hold dots, spaces, brackets
    if '"' in key or "\\" in key:
        raise ValueError(f"metadata filter key {key!r}: keys with '\"' or '\\' cannot be filtered")
    return f'$."{key}"'


def check_filter_scalar(f: MetadataFilter, value: Any) -> Any:
    """``value`` when it is a str, int, float or bool.

    Raises:
        ValueError: any other value, naming the filter's key and operator.
    """
    if not isinstance(value, _Scalar):
        raise ValueError(
            f"metadata filter {f.key!r} {f.operator.value}: value must be a string, number or bool, got {value!r}"
        )
    return value


#: A hook giving a leaf another, equivalent SQL form (appending its parameters), or ``None``.
LeafSQL = Callable[[MetadataFilter, List[Any]], Optional[str]]


def filters_to_sql(filters: MetadataFilters, column: str, leaf_sql: Optional[LeafSQL] = None) -> Tuple[str, List[Any]]:
    """Compile ``filters`` to an SQL boolean expression over the JSON/JSONB ``column``.

    ``leaf_sql`` may give a leaf another SQL form that matches exactly the same rows (the SQLite
    store's metadata index: :mod:`ragloom.vector_stores.metadata_index`); leaves it answers ``None``
    for are compiled here.  Returns ``(sql, params)`` with positional ``?`` parameters in order.
    """
    params: List[Any] = []
    sql = _compile_group(filters, column, params, leaf_sql)
    return sql, params


def _compile_group(group: MetadataFilters, column: str, params: List[Any], leaf_sql: Optional[LeafSQL]) -> str:
    parts = []
    for f in group.filters:
        if isinstance(f, MetadataFilters):
            parts.append(_compile_group(f, column, params, leaf_sql))
        else:
            other = leaf_sql(f, params) if leaf_sql is not None else None
            parts.append(other if other is not None else _compile_one(f, column, params))
    if not parts:
        return "1"
    joiner = " AND " if group.condition == FilterCondition.AND else " OR "
    return "(" + joiner.join(parts) + ")"


def _compile_one(f: MetadataFilter, column: str, params: List[Any]) -> str:
    op = FilterOperator(f.operator)
    path = _json_path(f.key)
    value_expr = f"json_extract({column}, ?)"
    if op == FilterOperator.EQ:
        params.extend([path, check_filter_scalar(f, f.value)])
        return f"({value_expr} = ?)"
    if op in _SQL_CMP:
        # order only like with like (SQLite would rank every number below every string)
        value = check_filter_scalar(f, f.value)
        kinds = "('text')" if isinstance(value, str) else "('integer', 'real', 'true', 'false')"
        params.extend([path, path, value])
        return f"(json_type({column}, ?) IN {kinds} AND {value_expr} {_SQL_CMP[op]} ?)"
    if op == FilterOperator.NE:
        params.extend([path, path, check_filter_scalar(f, f.value)])
        return f"({value_expr} IS NOT NULL AND {value_expr} != ?)"
    if op in (FilterOperator.IN, FilterOperator.NIN):
        values = [check_filter_scalar(f, v) for v in f.value]
        if op == FilterOperator.IN:
            params.extend([path, json.dumps(values)])
            return f"({value_expr} IN (SELECT value FROM json_each(?)))"
        params.extend([path, path, json.dumps(values)])
        return f"({value_expr} IS NOT NULL AND {value_expr} NOT IN (SELECT value FROM json_each(?)))"
    if op == FilterOperator.CONTAINS:
        value = check_filter_scalar(f, f.value)
        params.extend([path, path, value])
        array_test = f"EXISTS (SELECT 1 FROM json_each({column}, ?) WHERE value = ?)"
        if isinstance(value, str):
            params.extend([path, value])
            text_test = f"instr({value_expr}, ?) > 0"
        else:
            text_test = "0"
        return f"(CASE json_type({column}, ?) WHEN 'array' THEN {array_test} WHEN 'text' THEN {text_test} ELSE 0 END)"
    if op == FilterOperator.TEXT_MATCH:
        if not isinstance(f.value, str):
            raise ValueError(f"metadata filter {f.key!r} text_match: value must be a string, got {f.value!r}")
        params.extend([path, path, f.value.casefold()])
        return f"(json_type({column}, ?) = 'text' AND instr(ragloom_casefold({value_expr}), ?) > 0)"
    if op in (FilterOperator.ANY, FilterOperator.ALL):
        values = json.dumps([check_filter_scalar(f, v) for v in f.value])
        held = f"(SELECT value FROM json_each({column}, ?))"
        if op == FilterOperator.ANY:
            test = f"EXISTS (SELECT 1 FROM json_each(?) AS w WHERE w.value IN {held})"
        else:
            test = f"NOT EXISTS (SELECT 1 FROM json_each(?) AS w WHERE w.value NOT IN {held})"
        params.extend([path, values, path])
        return f"(json_type({column}, ?) = 'array' AND {test})"
    if op == FilterOperator.IS_EMPTY:
        params.extend([path, path, path])
        return (f"(coalesce(json_type({column}, ?), 'null') = 'null' OR "
                f"(json_type({column}, ?) = 'array' AND json_array_length({column}, ?) = 0))")
    raise ValueError(f"unsupported filter operator {op!r}")


def metadata_matches(metadata: Mapping[str, Any], filters: MetadataFilters) -> bool:
    """Evaluate ``filters`` against one node's metadata in Python."""
    results = (
        metadata_matches(metadata, f) if isinstance(f, MetadataFilters) else _match_one(metadata, f)
        for f in filters.filters
    )
    if not filters.filters:
        return True
    return all(results) if filters.condition == FilterCondition.AND else any(results)


def _eq(a: Any, b: Any) -> bool:
    # SQLite compares JSON true/false as 1/0 and numbers across int/float; so does Python
    if isinstance(a, str) != isinstance(b, str):
        return False
    return bool(a == b)


_ORDER = {FilterOperator.GT: operator.gt, FilterOperator.LT: operator.lt, FilterOperator.GTE: operator.ge,
          FilterOperator.LTE: operator.le}


def _match_one(metadata: Mapping[str, Any], f: MetadataFilter) -> bool:
    op = FilterOperator(f.operator)
    if op == FilterOperator.IS_EMPTY:
        value = metadata.get(f.key)
        return value is None or value == []
    if f.key not in metadata or metadata[f.key] is None:
        return False
    mv = metadata[f.key]
    if op in (FilterOperator.EQ, FilterOperator.NE):
        if isinstance(mv, (list, dict)):
            return op == FilterOperator.NE
        return _eq(mv, f.value) == (op == FilterOperator.EQ)
    if op in _ORDER:
        if isinstance(mv, (list, dict)) or isinstance(mv, str) != isinstance(f.value, str):
            return False
        return bool(_ORDER[op](mv, f.value))
    if op == FilterOperator.IN:
        return not isinstance(mv, (list, dict)) and any(_eq(mv, v) for v in f.value)
    if op == FilterOperator.NIN:
        return isinstance(mv, (list, dict)) or not any(_eq(mv, v) for v in f.value)
    if op == FilterOperator.CONTAINS:
        if isinstance(mv, list):
            return any(_eq(x, f.value) for x in mv)
        if isinstance(mv, str) and isinstance(f.value, str):
            return f.value in mv
        return False
    if op == FilterOperator.TEXT_MATCH:
        return isinstance(mv, str) and f.value.casefold() in mv.casefold()
    if op in (FilterOperator.ANY, FilterOperator.ALL):
        if not isinstance(mv, list):
            return False
        found = (any(_eq(x, v) for x in mv) for v in f.value)
        return any(found) if op == FilterOperator.ANY else all(found)
    raise ValueError(f"unsupported filter operator {op!r}")
