"""``MilvusVectorStore``: nodes in a Milvus collection, over ``pymilvus`` (extra ``ragloom[milvus]``).

LlamaIndex users import it from ``llama_index.vector_stores.milvus``; here it is
``ragloom.vector_stores.milvus``.  The same code talks to a standalone server and to a
cluster — only ``uri`` and ``token`` change::

    # standalone (e.g. `milvus-server --data DIR` from the PyPI package `milvus`)
    MilvusVectorStore(uri="http://127.0.0.1:19530", collection_name="docs", dim=384)
    # a cluster (its proxy / load balancer), with authentication ("user:password" or an API key)
    MilvusVectorStore(uri="https://milvus.example.internal:19530", token="ragloom:secret",
                      collection_name="docs", dim=384)

Milvus Lite (``uri="./file.db"``) is not supported: its selective metadata filters return
wrong results (measured in the project's vector-store notes: ``doc_id == X`` found 0 of 10
matching rows).

**Schema** (created by this store; dynamic fields off): ``id`` VARCHAR primary key (node id),
``embedding`` FLOAT_VECTOR(dim), ``doc_id`` VARCHAR (``ref_doc_id``, ``""`` when none),
``text`` VARCHAR (the node text), ``_node_content`` VARCHAR (the node as JSON, without embedding
and text) and ``metadata`` JSON (the node's metadata without its ``None`` values, for filters).
VARCHAR fields hold at most 65,535 bytes; :meth:`MilvusVectorStore.validate_nodes` rejects a node
whose text or JSON is longer before anything is embedded.  Collections made by other tools
(LlamaIndex's dynamic-field layout) are refused with a clear error.

**Index**: ``FLAT`` (exact search, like ragloom's SQLite default) with the ``COSINE`` metric
unless ``index_config`` says otherwise.  Why not HNSW by default: on the Milvus 2.3.5 standalone
server, a top-10 query with a filter matching 10 of 100k rows returned only 2 of them on an HNSW
collection (5 after the segments were flushed and indexed), and all 10 on a ``FLAT`` one (measured
with ``tests/vector_stores/test_milvus.py``'s 100k data; 0.1 s per query at 100k × 384).  Pass
``index_config={"index_type": "HNSW", "params": {"M": 16, "efConstruction": 200}}`` for faster
unfiltered search on large collections, accepting that selective filters may miss matches;
queries then search with ``ef = max(search_config["ef"] (default 64), top_k)``.
Scores: cosine similarity (``COSINE``) or inner product (``IP``), higher is better.

**Consistency**: ``"Strong"`` by default, so a query sees every write made before it, from any
process (LlamaIndex defaults to ``"Session"``: only the writing client's own writes).

**Filters** compile to Milvus boolean expressions over the ``metadata`` JSON field with ragloom's
filter semantics (a node without the key never matches, ``!=`` and ``nin`` included, via
``exists``).  Milvus 2.3 cannot evaluate ``text_match`` (its ``like`` matches prefixes only,
case-sensitively), nor order booleans; those raise
:class:`~ragloom.vector_stores.utils.UnsupportedFilterError`.  ``contains`` matches an element of a
list-valued field (``json_contains``); on a string-valued field it matches nothing.

Limits: ``similarity_top_k`` ≤ 16,384 (Milvus's top-k limit).  Writes are upserts in batches
of ``batch_size`` rows (and ≤ 32 MiB each, under Milvus's 64 MiB gRPC message limit); a failed
write of several batches may leave earlier batches written.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import msgspec
import numpy as np

from ragloom._optional import require
from ragloom.schema import BaseNode, MetadataMode
from ragloom.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from ragloom.vector_stores.filters import check_filter_scalar
from ragloom.vector_stores.utils import (
    UnsupportedFilterError,
    check_default_query,
    check_embeddings,
    combine_clauses,
    compile_filter_tree,
    dedupe_last,
    filterable_metadata,
    metadata_dict_to_node,
    node_content_json,
    same_kind_groups,
    validate_node_metadata,
)

logger = logging.getLogger(__name__)

__all__ = ["MilvusVectorStore", "expr_from_filters", "MAX_TOP_K", "MAX_VARCHAR_BYTES"]

ID_FIELD = "id"
TEXT_FIELD = "text"
NODE_FIELD = "_node_content"
METADATA_FIELD = "metadata"
#: Milvus's largest VARCHAR ``max_length`` (bytes).
MAX_VARCHAR_BYTES = 65_535
#: Milvus's JSON field limit (bytes).
MAX_JSON_BYTES = 65_536
#: Milvus's largest top-k (and query limit).
MAX_TOP_K = 16_384
_MAX_BATCH_BYTES = 32 * 1024 * 1024
_PAGE = 1000
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
_METRICS = ("COSINE", "IP")
_CONSISTENCY = ("Strong", "Session", "Bounded", "Eventually")
DEFAULT_INDEX_CONFIG: Dict[str, Any] = {"index_type": "FLAT", "params": {}}
DEFAULT_SEARCH_EF = 64

# ---------------------------------------------------------------------------- expressions
_TRUE, _FALSE = "<true>", "<false>"
_CMP = {FilterOperator.GT: ">", FilterOperator.LT: "<", FilterOperator.GTE: ">=", FilterOperator.LTE: "<="}


def _lit(value: Any) -> str:
    """A Milvus expression literal (strings as JSON strings: Milvus unquotes them like Go)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(value)


def _list(values: Sequence[Any]) -> str:
    return "[" + ", ".join(_lit(v) for v in values) + "]"


def _join_kept(kept: List[str], condition: FilterCondition) -> str:
    return "(" + f" {condition.value} ".join(kept) + ")"


def _join(parts: List[str], condition: FilterCondition) -> str:
    return combine_clauses(parts, condition, _TRUE, _FALSE, _join_kept)


def _one(f: MetadataFilter) -> str:
    op = FilterOperator(f.operator)
    path = f"{METADATA_FIELD}[{json.dumps(f.key, ensure_ascii=False)}]"
    exists = f"(exists {path})"
    if op == FilterOperator.EQ:
        return f"({path} == {_lit(check_filter_scalar(f, f.value))})"
    if op == FilterOperator.NE:
        return f"({exists} and {path} != {_lit(check_filter_scalar(f, f.value))})"
    if op in _CMP:
        value = check_filter_scalar(f, f.value)
        if isinstance(value, bool):
            raise UnsupportedFilterError(f"Milvus cannot order booleans: filter {f.key!r} {op.value} {value!r}")
        return f"({path} {_CMP[op]} {_lit(value)})"
    if op == FilterOperator.IN:
        groups = same_kind_groups(f, list(f.value))
        return _join([f"({path} in {_list(g)})" for g in groups], FilterCondition.OR) if groups else _FALSE
    if op == FilterOperator.NIN:
        groups = same_kind_groups(f, list(f.value))
        return _join([exists] + [f"({path} not in {_list(g)})" for g in groups], FilterCondition.AND)
    if op == FilterOperator.CONTAINS:
        return f"json_contains({path}, {_lit(check_filter_scalar(f, f.value))})"
    if op == FilterOperator.TEXT_MATCH:
        raise UnsupportedFilterError(
            f"Milvus 2.3 cannot evaluate text_match (case-insensitive substring) on metadata field {f.key!r}: "
            "its 'like' matches prefixes only; use == / in on exact values, or SQLiteVectorStore"
        )
    if op in (FilterOperator.ANY, FilterOperator.ALL):  # a list holds one of / all of the values
        values = [check_filter_scalar(f, v) for v in f.value]
        name = "json_contains_any" if op == FilterOperator.ANY else "json_contains_all"
        return f"{name}({path}, {_list(values)})"
    if op == FilterOperator.IS_EMPTY:
        raise UnsupportedFilterError(
            f"Milvus 2.3 cannot evaluate is_empty on metadata field {f.key!r} (no test for a JSON null or an "
            "empty list); use SQLiteVectorStore"
        )
    raise ValueError(f"unsupported filter operator {op!r}")


def expr_from_filters(
    filters: Optional[MetadataFilters] = None,
    doc_ids: Optional[Sequence[str]] = None,
    node_ids: Optional[Sequence[str]] = None,
    doc_id_field: str = "doc_id",
) -> Optional[str]:
    """A Milvus boolean expression for ragloom filters, ``ref_doc_id`` and node-id restrictions.

    Returns ``""`` when nothing restricts and ``None`` when nothing can match (e.g. ``in []``).

    Raises:
        UnsupportedFilterError: an operator Milvus cannot evaluate (see the module docs).
        ValueError: a malformed filter value.
    """
    parts: List[str] = []
    if filters is not None:
        parts.append(compile_filter_tree(filters, _one, _TRUE, _FALSE, _join_kept))
    if doc_ids is not None:
        parts.append(f"({doc_id_field} in {_list([str(d) for d in doc_ids])})" if doc_ids else _FALSE)
    if node_ids is not None:
        parts.append(f"({ID_FIELD} in {_list([str(n) for n in node_ids])})" if node_ids else _FALSE)
    expr = _join(parts, FilterCondition.AND)
    if expr == _FALSE:
        return None
    return "" if expr == _TRUE else expr


# ---------------------------------------------------------------------------- the store
def _import_pymilvus() -> Any:
    return require("pymilvus", "milvus", "MilvusVectorStore")


class MilvusVectorStore(BasePydanticVectorStore):
    """Nodes in a Milvus collection (standalone or cluster).

    Args:
        uri: the Milvus server, e.g. ``"http://127.0.0.1:19530"``.
        token: ``"user:password"`` or an API key; ``""`` without authentication.
        collection_name: letters, digits and ``_``, not starting with a digit, ≤ 255 characters.
        dim: embedding dimension; creates the collection now if it does not exist.  ``None``:
            the first :meth:`add` creates it with its nodes' dimension.
        embedding_field, doc_id_field: names of those fields (LlamaIndex's defaults).
        similarity_metric: ``"COSINE"`` (default) or ``"IP"``.
        consistency_level: ``"Strong"`` (default), ``"Session"``, ``"Bounded"`` or ``"Eventually"``.
        overwrite: drop an existing collection of that name first.
        index_config: ``{"index_type": ..., "params": {...}}`` for the vector index (default
            ``FLAT``, exact: see the module docs before choosing HNSW).
        search_config: search ``params`` (e.g. ``{"ef": 128}`` for HNSW).
        batch_size: rows per upsert, in ``[1, 100000]``.
        timeout: seconds per Milvus call (``None``: pymilvus's default).
        user, password, db_name: passed to ``pymilvus.MilvusClient``.

    Raises:
        ValueError: an argument outside the ranges above; an existing collection whose fields
            are not this store's layout.
        MissingDependencyError: (an ``ImportError``) pymilvus is not installed (extra ``ragloom[milvus]``).
        pymilvus.MilvusException: the server cannot be reached or refuses.
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    flat_metadata: bool = False
    supports_hybrid: bool = False

    def __init__(
        self,
        uri: str = "http://localhost:19530",
        token: str = "",
        collection_name: str = "llamacollection",
        dim: Optional[int] = None,
        embedding_field: str = "embedding",
        doc_id_field: str = "doc_id",
        similarity_metric: str = "COSINE",
        consistency_level: str = "Strong",
        overwrite: bool = False,
        index_config: Optional[Dict[str, Any]] = None,
        search_config: Optional[Dict[str, Any]] = None,
        batch_size: int = 1000,
        timeout: Optional[float] = None,
        user: str = "",
        password: str = "",
        db_name: str = "",
        **kwargs: Any,
    ) -> None:
        for arg, value in (
            ("collection_name", collection_name),
            ("embedding_field", embedding_field),
            ("doc_id_field", doc_id_field),
        ):
            if not isinstance(value, str) or not _NAME_RE.match(value):
                raise ValueError(f"{arg} must match [A-Za-z_][A-Za-z0-9_]{{0,254}}, got {value!r}")
        if len({embedding_field, doc_id_field, ID_FIELD, TEXT_FIELD, NODE_FIELD, METADATA_FIELD}) != 6:
            raise ValueError(f"embedding_field and doc_id_field must differ from each other and from {ID_FIELD!r}, "
                             f"{TEXT_FIELD!r}, {NODE_FIELD!r}, {METADATA_FIELD!r}")
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= 32768):
            raise ValueError(f"dim must be None or an int in [1, 32768], got {dim!r}")
        metric = str(similarity_metric).upper()
        if metric not in _METRICS:
            raise ValueError(f"similarity_metric must be one of {', '.join(_METRICS)}, got {similarity_metric!r}")
        if consistency_level not in _CONSISTENCY:
            raise ValueError(f"consistency_level must be one of {', '.join(_CONSISTENCY)}, got {consistency_level!r}")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or not 1 <= batch_size <= 100_000:
            raise ValueError(f"batch_size must be an int in [1, 100000], got {batch_size!r}")
        if str(uri).endswith(".db"):
            raise ValueError(
                f"uri {uri!r} names a Milvus Lite file; Milvus Lite is not supported (its selective filters return "
                "wrong results). Run a Milvus server (e.g. `milvus-server --data DIR`) and pass its http:// URI"
            )
        pymilvus = _import_pymilvus()
        # what a copy in another process reconnects with (__reduce__); never re-drops the collection
        self._init_args: Dict[str, Any] = {
            "uri": uri, "token": token, "collection_name": collection_name, "dim": dim,
            "embedding_field": embedding_field, "doc_id_field": doc_id_field, "similarity_metric": metric,
            "consistency_level": consistency_level, "index_config": index_config, "search_config": search_config,
            "batch_size": batch_size, "timeout": timeout, "user": user, "password": password, "db_name": db_name,
        }
        self.uri = uri
        self.collection_name = collection_name
        self.embedding_field = embedding_field
        self.doc_id_field = doc_id_field
        self.similarity_metric = metric
        self.consistency_level = consistency_level
        self.index_config: Dict[str, Any] = dict(index_config or DEFAULT_INDEX_CONFIG)
        self.search_config: Dict[str, Any] = dict(search_config or {})
        self.batch_size = batch_size
        self.timeout = timeout
        self._dim_arg = dim
        self._dim: Optional[int] = None
        self._client = pymilvus.MilvusClient(
            uri=uri, token=token, user=user, password=password, db_name=db_name, timeout=timeout
        )
        if overwrite and self._client.has_collection(collection_name):
            self._client.drop_collection(collection_name)
        if self._client.has_collection(collection_name):
            self._load_existing()
        elif dim is not None:
            self._create(dim)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        """Pickle as the connection arguments: a worker process of a distributed run (Ray) opens
        its own client to the same collection (credentials included)."""
        return (functools.partial(type(self), **self._init_args), ())

    # -- collection management --------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The ``pymilvus.MilvusClient``."""
        return self._client

    @property
    def dimension(self) -> Optional[int]:
        """The collection's embedding dimension (``None`` before the collection exists)."""
        return self._dim

    def _load_existing(self) -> None:
        desc = self._client.describe_collection(self.collection_name)
        fields = {f["name"]: f for f in desc.get("fields", [])}
        wanted = (ID_FIELD, self.embedding_field, self.doc_id_field, TEXT_FIELD, NODE_FIELD, METADATA_FIELD)
        missing = [name for name in wanted if name not in fields]
        if missing:
            raise ValueError(
                f"Milvus collection {self.collection_name!r} lacks the field(s) {', '.join(missing)}: it was not "
                f"created by ragloom's MilvusVectorStore (fields: {', '.join(fields)}); use another collection_name "
                "or overwrite=True"
            )
        dim = int((fields[self.embedding_field].get("params") or {}).get("dim", 0)) or None
        if dim is None:
            raise ValueError(f"field {self.embedding_field!r} of {self.collection_name!r} is not a float vector field")
        if self._dim_arg is not None and self._dim_arg != dim:
            raise ValueError(
                f"dim={self._dim_arg} but collection {self.collection_name!r} holds {dim}-dimensional vectors"
            )
        self._dim = dim
        state = self._client.get_load_state(self.collection_name)
        if "Loaded" not in str(state.get("state", "")):
            self._client.load_collection(self.collection_name)

    def _create(self, dim: int) -> None:
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description="ragloom nodes")
        schema.add_field(ID_FIELD, DataType.VARCHAR, is_primary=True, max_length=MAX_VARCHAR_BYTES)
        schema.add_field(self.embedding_field, DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field(self.doc_id_field, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
        schema.add_field(TEXT_FIELD, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
        schema.add_field(NODE_FIELD, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
        schema.add_field(METADATA_FIELD, DataType.JSON)
        index = self._client.prepare_index_params()
        cfg = dict(self.index_config)
        index.add_index(
            field_name=self.embedding_field,
            index_type=cfg.get("index_type", "FLAT"),
            metric_type=self.similarity_metric,
            params=dict(cfg.get("params") or {}),
        )
        try:
            self._client.create_collection(
                self.collection_name, schema=schema, index_params=index, consistency_level=self.consistency_level
            )
        except Exception:
            if not self._client.has_collection(self.collection_name):  # not a create/create race
                raise
            self._load_existing()
            return
        self._dim = dim

    def _exists(self) -> bool:
        if self._dim is not None:
            return True
        if self._client.has_collection(self.collection_name):
            self._load_existing()
            return True
        return False

    def count(self) -> int:
        if not self._exists():
            return 0
        rows = self._client.query(
            self.collection_name, filter="", output_fields=["count(*)"], consistency_level=self.consistency_level
        )
        return int(rows[0]["count(*)"]) if rows else 0

    def __len__(self) -> int:
        return self.count()

    # -- writes -----------------------------------------------------------------------------
    def validate_nodes(self, nodes: Sequence[BaseNode]) -> None:
        """Reject nodes Milvus cannot store, before any embedding: metadata types (see
        :func:`~ragloom.vector_stores.utils.validate_node_metadata`) and VARCHAR sizes (node id,
        text and node JSON ≤ 65,535 UTF-8 bytes each; metadata JSON ≤ 65,536 bytes).

        Raises:
            ValueError: naming the node id and the reason.
        """
        for node in nodes:
            validate_node_metadata(node)
            for what, value in (
                ("id", node.node_id),
                ("ref_doc_id", node.ref_doc_id or ""),
                ("text", node.get_content(MetadataMode.NONE)),
                ("JSON (metadata and relationships)", node_content_json(node)),
            ):
                size = len(value.encode("utf-8", "surrogatepass"))
                if size > MAX_VARCHAR_BYTES:
                    raise ValueError(
                        f"node {node.node_id}: its {what} is {size} UTF-8 bytes; Milvus VARCHAR fields hold at most "
                        f"{MAX_VARCHAR_BYTES} (split the text into smaller chunks or trim the metadata)"
                    )
            size = len(msgspec.json.encode(filterable_metadata(node.metadata)))
            if size > MAX_JSON_BYTES:
                raise ValueError(
                    f"node {node.node_id}: its metadata is {size} bytes of JSON; "
                    f"Milvus JSON fields hold at most {MAX_JSON_BYTES}"
                )

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> List[str]:
        """Upsert nodes (replacing any with the same id); return their ids.

        The first add creates the collection when it does not exist yet.

        Raises:
            ValueError: a node without an embedding, of another dimension than the collection's
                (or the first node's), or that :meth:`validate_nodes` rejects — naming the node;
                nothing is written.
        """
        if not nodes:
            return []
        batch = dedupe_last(nodes)
        self.validate_nodes(batch)
        matrix = check_embeddings(batch, self._dim if self._exists() else None)
        if self._dim is None:
            self._create(int(matrix.shape[1]))
        if matrix.shape[1] != self._dim:
            raise ValueError(
                f"node {batch[0].node_id}: embedding has dimension {matrix.shape[1]}, "
                f"but collection {self.collection_name!r} holds {self._dim}-dimensional vectors"
            )
        vectors = matrix.tolist()
        rows: List[Dict[str, Any]] = []
        size = 0
        for node, vec in zip(batch, vectors, strict=True):
            row = {
                ID_FIELD: node.node_id,
                self.embedding_field: vec,
                self.doc_id_field: node.ref_doc_id or "",
                TEXT_FIELD: node.get_content(MetadataMode.NONE),
                NODE_FIELD: node_content_json(node),
                METADATA_FIELD: filterable_metadata(node.metadata),
            }
            row_bytes = 4 * len(vec) + len(row[TEXT_FIELD]) * 3 + len(row[NODE_FIELD]) * 2 + 64
            if rows and (len(rows) >= self.batch_size or size + row_bytes > _MAX_BATCH_BYTES):
                self._client.upsert(self.collection_name, rows)
                rows, size = [], 0
            rows.append(row)
            size += row_bytes
        if rows:
            self._client.upsert(self.collection_name, rows)
        return [n.node_id for n in nodes]

    def _delete_expr(self, expr: str) -> None:
        self._client.delete(self.collection_name, filter=expr)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the document ``ref_doc_id`` (none: no error)."""
        if self._exists():
            self._delete_expr(f"{self.doc_id_field} == {_lit(str(ref_doc_id))}")

    def delete_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete nodes by id and/or metadata filter (both: nodes matching both).

        Raises:
            ValueError: neither ``node_ids`` nor ``filters`` (use :meth:`clear`).
            UnsupportedFilterError: a filter Milvus cannot evaluate.
        """
        if node_ids is None and filters is None:
            raise ValueError("delete_nodes needs node_ids or filters (use clear() to delete everything)")
        expr = expr_from_filters(filters, node_ids=node_ids)
        if expr is None or not self._exists():
            return
        self._delete_expr(expr or f'{ID_FIELD} != ""')

    def clear(self) -> None:
        """Drop the collection; the next :meth:`add` (or ``dim`` given at construction) re-creates it."""
        if self._client.has_collection(self.collection_name):
            self._client.drop_collection(self.collection_name)
        self._dim = None
        if self._dim_arg is not None:
            self._create(self._dim_arg)

    # -- reads ------------------------------------------------------------------------------
    def _node(self, row: Dict[str, Any], with_embedding: bool) -> BaseNode:
        entity = row.get("entity", row)
        node = metadata_dict_to_node(
            {NODE_FIELD: entity.get(NODE_FIELD)}, text=entity.get(TEXT_FIELD), node_id=row.get(ID_FIELD)
        )
        if with_embedding and entity.get(self.embedding_field) is not None:
            node.embedding = np.asarray(entity[self.embedding_field], dtype=np.float32).tolist()
        return node

    def get_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
    ) -> List[BaseNode]:
        """Nodes (with embeddings) by id and/or filter; all nodes when neither is given.

        With ``node_ids`` the result follows their order, skipping unknown ids.

        Raises:
            UnsupportedFilterError: a filter Milvus cannot evaluate.
        """
        if not self._exists():
            return []
        fields = [ID_FIELD, TEXT_FIELD, NODE_FIELD, self.embedding_field]
        if node_ids is not None:
            wanted = list(dict.fromkeys(node_ids))
            found: Dict[str, BaseNode] = {}
            for start in range(0, len(wanted), 10_000):
                chunk = wanted[start : start + 10_000]
                expr = expr_from_filters(filters, node_ids=chunk)
                if expr is None:
                    return []
                rows = self._client.query(self.collection_name, filter=expr, output_fields=fields, limit=len(chunk),
                                          consistency_level=self.consistency_level)
                for row in rows:
                    found[row[ID_FIELD]] = self._node(row, True)
            return [found[i] for i in wanted if i in found]
        expr = expr_from_filters(filters)
        if expr is None:
            return []
        # primary-key cursor pages (what pymilvus's query_iterator does, but with the key quoted
        # properly: its iterator breaks on ids that contain a double quote)
        out: List[BaseNode] = []
        last: Optional[str] = None
        while True:
            page_expr = expr if last is None else f"({ID_FIELD} > {_lit(last)})" + (f" and ({expr})" if expr else "")
            rows = self._client.query(
                self.collection_name,
                filter=page_expr,
                output_fields=fields,
                limit=_PAGE,
                consistency_level=self.consistency_level,
                iterator="True",
                reduce_stop_for_best="True",
            )
            if not rows:
                break
            rows.sort(key=lambda r: r[ID_FIELD])
            out.extend(self._node(row, True) for row in rows)
            last = rows[-1][ID_FIELD]
            if len(rows) < _PAGE:
                break
        return out

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nearest nodes, best first (scores: cosine or inner product).

        ``filters``, ``doc_ids`` and ``node_ids`` restrict the search inside Milvus.

        Raises:
            ValueError: a mode other than ``default``; no query embedding or one of the wrong
                dimension; ``similarity_top_k`` above 16,384.
            UnsupportedFilterError: a filter Milvus cannot evaluate.
        """
        check_default_query(query, "MilvusVectorStore")
        k = int(query.similarity_top_k)
        if k > MAX_TOP_K:
            raise ValueError(f"similarity_top_k must be <= {MAX_TOP_K} for Milvus, got {k}")
        q = np.asarray(query.query_embedding, dtype=np.float32).reshape(-1)
        empty = VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        expr = expr_from_filters(
            query.filters, doc_ids=query.doc_ids, node_ids=query.node_ids, doc_id_field=self.doc_id_field
        )
        if not self._exists():
            return empty
        if q.shape[0] != self._dim:
            raise ValueError(
                f"query embedding has dimension {q.shape[0]}, "
                f"but collection {self.collection_name!r} holds {self._dim}-dimensional vectors"
            )
        if k <= 0 or expr is None:
            return empty
        params = dict(self.search_config)
        if str(self.index_config.get("index_type", "FLAT")).upper() == "HNSW":
            params["ef"] = max(int(params.get("ef", DEFAULT_SEARCH_EF)), k)
        hits = self._client.search(
            self.collection_name,
            data=[q.tolist()],
            filter=expr,
            limit=k,
            output_fields=[TEXT_FIELD, NODE_FIELD],
            search_params={"metric_type": self.similarity_metric, "params": params},
            anns_field=self.embedding_field,
            consistency_level=self.consistency_level,
        )[0]
        ids = [str(h[ID_FIELD] if ID_FIELD in h else h["id"]) for h in hits]
        nodes = [self._node({**h, ID_FIELD: i}, False) for h, i in zip(hits, ids, strict=True)]
        sims = [float(h["distance"]) for h in hits]
        return VectorStoreQueryResult(nodes=nodes, similarities=sims, ids=ids)

    def close(self) -> None:
        """Close the client's connection."""
        self._client.close()
