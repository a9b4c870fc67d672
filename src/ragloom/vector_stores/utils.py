"""Helpers for vector stores that keep nodes as rows of a foreign database (Chroma, Milvus …).

LlamaIndex names: :func:`node_to_metadata_dict` packs a node into a flat metadata dict with
the whole node (minus embedding and, optionally, text) as JSON under ``_node_content``;
:func:`metadata_dict_to_node` unpacks it.  The JSON is ragloom's own node JSON
(:meth:`~ragloom.schema.BaseNode.to_json`), so the node round-trips exactly: metadata values
that a backend cannot hold natively (``None``, dicts, mixed lists) only lose their native type
in the *filterable* copy of the metadata, never in the node that comes back.

:func:`validate_node_metadata` is what such stores run in ``validate_nodes`` — before any
embedding is paid for — so a value no backend can store is reported with the node id and key
instead of failing after the embedding run.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import msgspec
import numpy as np

from ragloom.schema import BaseNode, TextNode, node_from_json
from ragloom.vector_stores.filters import check_filter_scalar
from ragloom.vector_stores.types import (
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

__all__ = [
    "UnsupportedFilterError",
    "RESERVED_METADATA_KEYS",
    "validate_node_metadata",
    "check_ref_doc_keys",
    "LLAMAINDEX_REF_DOC_KEYS",
    "filterable_metadata",
    "flat_metadata_value",
    "node_to_metadata_dict",
    "metadata_dict_to_node",
    "node_from_llamaindex",
    "node_content_json",
    "dedupe_last",
    "check_embeddings",
    "same_kind_groups",
    "combine_clauses",
    "compile_filter_tree",
    "check_default_query",
]

#: Keys the adapters write next to the user's metadata; user metadata may not use them.
RESERVED_METADATA_KEYS = ("_node_content", "_node_type", "ref_doc_id", "_ragloom_keys")
#: The source document's id, under the three keys LlamaIndex's ``node_to_metadata_dict`` writes
#: (``document_id`` for Chroma, ``doc_id`` for Pinecone/Qdrant/Redis, ``ref_doc_id`` for Weaviate):
#: rows written by ragloom can then be deleted and filtered by LlamaIndex, and the other way round.
LLAMAINDEX_REF_DOC_KEYS = ("document_id", "doc_id", "ref_doc_id")

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class UnsupportedFilterError(NotImplementedError, ValueError):
    """A metadata filter operator (or operand type) that this backend cannot evaluate.

    Raised instead of silently returning wrong matches; the message names the backend, the
    operator and what to use instead.  Subclasses both ``NotImplementedError`` and ``ValueError``.
    """


def _check_value(node_id: str, key: str, value: Any, depth: int = 0) -> None:
    if depth > 32:
        raise ValueError(f"node {node_id}: metadata[{key!r}] is nested more than 32 levels deep")
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"node {node_id}: metadata[{key!r}] = {value} does not fit a signed 64-bit integer")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"node {node_id}: metadata[{key!r}] is {value}; NaN and infinity cannot be stored")
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_value(node_id, key, item, depth + 1)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"node {node_id}: metadata[{key!r}] has a non-string key {k!r}")
            _check_value(node_id, key, v, depth + 1)
        return
    raise ValueError(
        f"node {node_id}: metadata[{key!r}] has type {type(value).__name__}; vector stores hold str, int, "
        "float, bool, None, and lists/dicts of those (convert it, e.g. str(value) or value.isoformat())"
    )


def validate_node_metadata(node: BaseNode) -> None:
    """Check that ``node.metadata`` can be stored by a foreign vector store and read back.

    Allowed: string keys (non-empty, not in :data:`RESERVED_METADATA_KEYS`, except
    ``ref_doc_id`` equal to the node's own) mapping to ``str``, ``bool``, ``int`` (signed
    64-bit), finite ``float``, ``None``, and lists/tuples/dicts of those (nested ≤ 32 levels).

    Raises:
        ValueError: the first offending key, naming the node id, the key and the reason.
    """
    for key, value in node.metadata.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"node {node.node_id}: metadata keys must be non-empty strings, got {key!r}")
        if key in RESERVED_METADATA_KEYS and not (key == "ref_doc_id" and value == node.ref_doc_id):
            raise ValueError(
                f"node {node.node_id}: metadata key {key!r} is reserved by ragloom's vector store adapters "
                f"({', '.join(RESERVED_METADATA_KEYS)}); rename it"
            )
        _check_value(node.node_id, key, value)


def check_ref_doc_keys(node: BaseNode) -> None:
    """Reject metadata ``doc_id`` / ``document_id`` values other than the node's ``ref_doc_id``: a store
    that writes :data:`LLAMAINDEX_REF_DOC_KEYS` (Chroma) keeps the source document's id there.

    Raises:
        ValueError: naming the node, the key and both values.
    """
    for key in ("document_id", "doc_id"):
        if key in node.metadata and node.metadata[key] != node.ref_doc_id:
            raise ValueError(
                f"node {node.node_id}: metadata key {key!r} ({node.metadata[key]!r}) is where this store keeps the "
                f"source document's id ({node.ref_doc_id!r}), as LlamaIndex does; rename the key"
            )


def flat_metadata_value(value: Any) -> Any:
    """The value Chroma-style flat metadata holds for ``value`` (``None``: leave the key out).

    ``str``/``int``/``float``/``bool`` stay; ``None`` and empty lists are left out (a filter
    treats them as a missing key, as ragloom's filter semantics do); a non-empty list of one
    scalar kind stays a list (ints and floats mixed become floats); anything else — dicts,
    nested or mixed lists — becomes its JSON text.
    """
    if value is None:
        return None
    if isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        if not value:
            return None
        if all(isinstance(v, bool) for v in value) or all(isinstance(v, str) for v in value):
            return list(value)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            if all(isinstance(v, int) for v in value):
                return list(value)
            return [float(v) for v in value]
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def filterable_metadata(metadata: Mapping[str, Any]) -> Dict[str, Any]:
    """``metadata`` without its top-level ``None`` values (a missing key and ``None`` filter alike)."""
    return {k: v for k, v in metadata.items() if v is not None}


def node_content_json(node: BaseNode, remove_text: bool = True) -> str:
    """The node as JSON without its embedding (and, with ``remove_text``, with empty text)."""
    changes: Dict[str, Any] = {"embedding": None}
    if remove_text and isinstance(node, TextNode):
        changes["text"] = ""
    return msgspec.json.encode(msgspec.structs.replace(node, **changes)).decode("utf-8")


def node_to_metadata_dict(node: BaseNode, remove_text: bool = True, flat_metadata: bool = True) -> Dict[str, Any]:
    """Flat metadata for one row: the node's metadata (flattened with :func:`flat_metadata_value`
    when ``flat_metadata``), plus ``_node_content`` (the node JSON), ``_node_type``, the source
    document's id under ``document_id``, ``doc_id`` and ``ref_doc_id`` (:data:`LLAMAINDEX_REF_DOC_KEYS`,
    when the node has one; LlamaIndex writes the text ``"None"`` otherwise, ragloom leaves them out)
    and ``_ragloom_keys`` (the list of stored metadata keys, which lets ``!=`` and ``nin`` filters
    require the key to exist).

    Raises:
        ValueError: metadata that :func:`validate_node_metadata` or :func:`check_ref_doc_keys` rejects.
    """
    validate_node_metadata(node)
    check_ref_doc_keys(node)
    out: Dict[str, Any] = {}
    for key, value in node.metadata.items():
        if key in LLAMAINDEX_REF_DOC_KEYS:
            continue
        stored = flat_metadata_value(value) if flat_metadata else value
        if stored is not None:
            out[key] = stored
    keys = list(out)
    if keys:
        out["_ragloom_keys"] = keys
    out["_node_content"] = node_content_json(node, remove_text=remove_text)
    out["_node_type"] = type(node).class_name()
    if node.ref_doc_id is not None:
        for key in LLAMAINDEX_REF_DOC_KEYS:
            out[key] = node.ref_doc_id
    return out


def metadata_dict_to_node(
    metadata: Mapping[str, Any], text: Optional[str] = None, node_id: Optional[str] = None
) -> BaseNode:
    """Rebuild a node from a row's metadata (and its text, kept apart by ``remove_text``).

    ``_node_content`` written by LlamaIndex (its pydantic node JSON) decodes as well: the field
    names are the same, fields ragloom does not have are ignored, and LlamaIndex's older spelling
    ``metadata_seperator`` is read as ``metadata_separator``.  Rows without ``_node_content``
    (written by other tools) become a :class:`TextNode` with the row's metadata minus the reserved
    keys.
    """
    content = metadata.get("_node_content") if metadata else None
    node: Optional[BaseNode] = None
    if isinstance(content, str):
        try:
            node = node_from_json(content)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
            node = None
        if node is not None and '"metadata_seperator"' in content:
            node = node_from_llamaindex(json.loads(content))
    if node is None:
        meta = {k: v for k, v in (metadata or {}).items()
                if k not in RESERVED_METADATA_KEYS and k not in LLAMAINDEX_REF_DOC_KEYS}
        node = TextNode(text=text or "", metadata=meta)
        if node_id is not None:
            node.id_ = node_id
        return node
    if text is not None and isinstance(node, TextNode) and not node.text:
        node.text = text
    return node


def node_from_llamaindex(data: Mapping[str, Any]) -> BaseNode:
    """A ragloom node from the dict LlamaIndex serialises a node to (``node.model_dump()``, the
    ``__data__`` of its JSON docstore, the ``_node_content`` of its vector-store rows).

    The field names are ragloom's own; fields ragloom does not have (``text_resource`` …) and
    ``class_name`` inside relationships are ignored; LlamaIndex's older spelling
    ``metadata_seperator`` is read as ``metadata_separator``.

    Raises:
        ValueError: a node type ragloom has no class for (``ImageNode`` …) or a malformed node.
    """
    d = dict(data)
    if "metadata_seperator" in d:
        sep = d.pop("metadata_seperator")
        d.setdefault("metadata_separator", sep)
    if not isinstance(d.get("class_name"), str):
        raise ValueError("LlamaIndex node has no class_name")
    try:
        return BaseNode.from_dict(d)
    except (msgspec.ValidationError, TypeError) as exc:
        raise ValueError(f"cannot read LlamaIndex node {d.get('id_')!r} of type {d['class_name']!r}: {exc}") from exc


def dedupe_last(nodes: Iterable[BaseNode]) -> List[BaseNode]:
    """Nodes with repeated ids collapsed to the last occurrence, in first-seen order of the survivors."""
    unique: Dict[str, BaseNode] = {}
    for node in nodes:
        unique.pop(node.node_id, None)
        unique[node.node_id] = node
    return list(unique.values())


def check_embeddings(nodes: Sequence[BaseNode], dim: Optional[int]) -> np.ndarray:
    """The nodes' embeddings as one ``(len(nodes), d)`` float32 matrix, after checking that every
    node has a finite embedding of one dimension ``d`` (``dim`` when the store already knows it).

    Raises:
        ValueError: naming the first node with no, an empty, a non-finite, or a wrongly sized embedding.
    """
    expected = dim
    for node in nodes:
        emb = node.embedding
        if emb is None:
            raise ValueError(f"node {node.node_id} has no embedding; embed nodes before adding them to a vector store")
        n = len(emb)
        if n == 0:
            raise ValueError(f"node {node.node_id} has an empty embedding")
        if expected is not None and n != expected:
            where = "the dimension of this vector store" if dim is not None else "the first node's"
            raise ValueError(f"node {node.node_id}: embedding has dimension {n}, expected {expected} ({where})")
        expected = n
    matrix = np.asarray([node.embedding for node in nodes], dtype=np.float32).reshape(len(nodes), expected or 0)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"node {nodes[bad].node_id}: embedding contains NaN or infinity")
    return matrix


# ---------------------------------------------------------------------------- filter compilation
def same_kind_groups(f: MetadataFilter, values: Sequence[Any]) -> List[List[Any]]:
    """The operands of an ``in``/``nin`` filter split by kind — strings, bools, numbers — for
    backends whose list operators take values of one type (Chroma, Milvus).  Numbers form one
    group (all floats when any is a float); empty groups are left out.

    Raises:
        ValueError: an operand that is not a str, int, float or bool.
    """
    strs = [v for v in values if isinstance(v, str)]
    bools = [v for v in values if isinstance(v, bool)]
    nums = [check_filter_scalar(f, v) for v in values if not isinstance(v, (str, bool))]
    if any(isinstance(v, float) for v in nums):
        nums = [float(v) for v in nums]
    return [g for g in (strs, bools, nums) if g]


def combine_clauses(
    parts: List[Any],
    condition: FilterCondition,
    true: Any,
    false: Any,
    join: Callable[[List[Any], FilterCondition], Any],
) -> Any:
    """AND/OR of compiled backend clauses, folding the constants ``true`` (matches everything)
    and ``false`` (matches nothing): ``join(kept, condition)`` builds the backend clause when two
    or more parts remain.  No parts: ``true`` for AND and for OR (an empty group restricts nothing).
    """
    if condition == FilterCondition.AND:
        if any(p == false for p in parts):
            return false
        kept = [p for p in parts if p != true]
        if not kept:
            return true
        return kept[0] if len(kept) == 1 else join(kept, condition)
    if any(p == true for p in parts) or not parts:
        return true
    kept = [p for p in parts if p != false]
    if not kept:
        return false
    return kept[0] if len(kept) == 1 else join(kept, condition)


def compile_filter_tree(
    filters: MetadataFilters,
    compile_one: Callable[[MetadataFilter], Any],
    true: Any,
    false: Any,
    join: Callable[[List[Any], FilterCondition], Any],
) -> Any:
    """Compile a (nested) :class:`MetadataFilters` tree with the backend's ``compile_one`` for
    each filter, combining groups with :func:`combine_clauses`.

    Raises:
        whatever ``compile_one`` raises (``ValueError``, :class:`UnsupportedFilterError`).
    """
    if not filters.filters:
        return true
    parts = [
        compile_filter_tree(f, compile_one, true, false, join) if isinstance(f, MetadataFilters) else compile_one(f)
        for f in filters.filters
    ]
    return combine_clauses(parts, filters.condition, true, false, join)


def check_default_query(query: VectorStoreQuery, store_name: str) -> None:
    """Check that ``query`` is a dense (``default`` mode) query with a query embedding.

    Raises:
        ValueError: another mode (naming ``store_name``), or no ``query_embedding``.
    """
    mode = query.mode.value if isinstance(query.mode, VectorStoreQueryMode) else str(query.mode)
    if mode != VectorStoreQueryMode.DEFAULT.value:
        raise ValueError(f"{store_name} supports the query mode 'default' only, not {mode!r}")
    if query.query_embedding is None:
        raise ValueError("VectorStoreQuery.query_embedding is required")
