"""Index structs: the small records an index store keeps per index (LlamaIndex's ``IndexDict``)."""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Optional, Set, Tuple, Type, Union

import msgspec


def _new_id() -> str:
    return str(uuid.uuid4())


class IndexStruct(msgspec.Struct, kw_only=True, tag_field="type"):
    """Base of index structs: ``index_id`` names the index inside a storage context."""

    index_id: str = msgspec.field(default_factory=_new_id)
    summary: Optional[str] = None

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode("utf-8")

    @staticmethod
    def from_json(data: Union[str, bytes]) -> "IndexStruct":
        """Decode any registered struct (:func:`register_index_struct`) by its ``type`` tag.

        Raises:
            msgspec.ValidationError: an unknown ``type`` tag or a malformed struct.
        """
        return msgspec.json.decode(data, type=_struct_union())


class IndexDict(IndexStruct, kw_only=True, tag="vector_store"):
    """Struct of a :class:`~ragloom.indices.VectorStoreIndex`.

    ``nodes_dict`` maps vector-store ids to node ids; it is left empty when the
    vector store keeps the node text itself (``stores_text``), as with the default store.
    ``embed_model`` records the embedding model's identity (name and dimension) so a
    loaded index refuses to be queried with an incompatible model.
    """

    nodes_dict: Dict[str, str] = {}
    embed_model: Dict[str, object] = {}
    #: configuration of the node parser that made the stored nodes (set by ``ragloom index``,
    #: which re-chunks every document when it changes)
    node_parser: Dict[str, object] = {}

    def add_node(self, node_id: str, text_id: Optional[str] = None) -> str:
        vector_id = text_id or node_id
        self.nodes_dict[vector_id] = node_id
        return vector_id

    def delete(self, doc_id: str) -> None:
        self.nodes_dict.pop(doc_id, None)


class DocstoreIndexStruct(IndexStruct, kw_only=True):
    """Base of the structs of docstore-backed indexes (:class:`~ragloom.indices.base.BaseIndex`).

    Not tagged itself (never stored as such).  Which nodes such an index holds, per source document,
    and its source fingerprints are kept by the index store in its own tables (see
    :meth:`~ragloom.storage.index_store.types.BaseIndexStore.add_index_nodes`), not in this JSON, so a
    write costs O(batch), not O(index).  ``node_parser`` records the transformations the index was built
    with (as :attr:`IndexDict.node_parser`), so a reopened index re-chunks nothing on refresh.
    """

    node_parser: Dict[str, object] = {}


class IndexList(DocstoreIndexStruct, kw_only=True, tag="list"):
    """Struct of a :class:`~ragloom.indices.list.SummaryIndex` (LlamaIndex's ``IndexList``).

    ``nodes``: the node ids in insertion order.  Only filled in the copy ``index.index_struct`` returns
    (read from the index store's node table); stored empty.
    """

    nodes: List[str] = []

    def add_node(self, node: Any) -> None:
        """Append ``node``'s id (of a struct copy: the index itself records nodes through its ledger)."""
        self.nodes.append(node.node_id)


class KeywordTable(DocstoreIndexStruct, kw_only=True, tag="keyword_table"):
    """Struct of the keyword table indexes (LlamaIndex's ``KeywordTable``).

    ``table``: ``{keyword key: set of node ids}``.  Only filled in the copy ``index.index_struct`` returns
    (read from the index store's postings table); stored empty.  Keys are matching keys
    (:func:`ragloom.keywords.keyword_key`: English words stemmed).  ``extractor`` names how node keywords
    are found (``"llm"``, ``"simple"``, ``"rake"``), so ``load_index_from_storage`` reopens the right
    class.
    """

    table: Dict[str, Set[str]] = {}
    extractor: str = "llm"
    #: keywords asked per chunk, and the LLM extraction prompt's template (``None``: the default),
    #: recorded so a reopened index extracts as it was built (and its refresh rebuilds nothing)
    max_keywords_per_chunk: int = 10
    keyword_extract_template: Optional[str] = None

    @property
    def keywords(self) -> List[str]:
        return sorted(self.table)

    @property
    def node_ids(self) -> List[str]:
        return sorted({n for ids in self.table.values() for n in ids})


class IndexGraph(DocstoreIndexStruct, kw_only=True, tag="tree"):
    """Struct of a :class:`~ragloom.indices.tree.TreeIndex` (LlamaIndex's ``IndexGraph``).

    Stored: ``root_ids`` (the top-level node ids, in order), ``node_id_to_children_ids`` (summary id →
    child ids, in order), ``summaries`` (summary id → its text: summaries are derived data of this
    index and live here, not in the docstore), ``num_children`` and ``build_tree``.  The leaves are the
    index's nodes (docstore; index store records).  ``all_nodes`` and ``root_nodes`` (position → node
    id, LlamaIndex's shape: leaves in tree order, then summaries) are filled only in the copy
    ``index.index_struct`` returns.
    """

    all_nodes: Dict[int, str] = {}
    root_nodes: Dict[int, str] = {}
    node_id_to_children_ids: Dict[str, List[str]] = {}
    root_ids: List[str] = []
    summaries: Dict[str, str] = {}
    num_children: int = 10
    build_tree: bool = True

    @property
    def node_id_to_index(self) -> Dict[str, int]:
        return {node_id: index for index, node_id in self.all_nodes.items()}

    @property
    def size(self) -> int:
        return len(self.all_nodes)

    def get_index(self, node: Any) -> int:
        """Position of ``node`` in :attr:`all_nodes`."""
        return self.node_id_to_index[node.node_id]

    def get_children(self, parent_node: Any) -> Dict[int, str]:
        """``{position: node id}`` of the children of ``parent_node`` (``None``: the roots)."""
        if parent_node is None:
            return dict(self.root_nodes)
        index = self.node_id_to_index
        return {index[c]: c for c in self.node_id_to_children_ids.get(parent_node.node_id, []) if c in index}


class KG(DocstoreIndexStruct, kw_only=True, tag="kg"):
    """Struct of a :class:`~ragloom.indices.knowledge_graph.KnowledgeGraphIndex` (LlamaIndex's ``KG``).

    ``table``: ``{entity key: node ids}`` (the nodes each entity was extracted from), filled only in
    the copy ``index.index_struct`` returns (stored as the index store's postings).  The triplets live
    in the graph store, their vectors too (``embedding_dict`` and ``rel_map`` stay empty; LlamaIndex
    keeps vectors here).  Recorded: ``include_embeddings``, ``max_triplets_per_chunk``, the
    ``embed_model`` that embedded the triplets and ``extraction_digest`` (the extraction configuration
    the stored triplets were made with).
    """

    table: Dict[str, Set[str]] = {}
    rel_map: Dict[str, List[List[str]]] = {}
    embedding_dict: Dict[str, List[float]] = {}
    include_embeddings: bool = False
    max_triplets_per_chunk: int = 10
    embed_model: Dict[str, object] = {}
    extraction_digest: str = ""

    def search_node_by_keyword(self, keyword: str) -> List[str]:
        """Node ids of entity ``keyword`` (matched by its key: NFKC, case-folded)."""
        from ragloom.graph_stores.types import entity_key

        return sorted(self.table.get(entity_key(keyword), set()))


class IndexLPG(DocstoreIndexStruct, kw_only=True, tag="simple_lpg"):
    """Struct of a :class:`~ragloom.indices.property_graph.PropertyGraphIndex` (LlamaIndex's
    ``IndexLPG``): the graph lives in the property graph store; recorded here are ``embed_kg_nodes``
    and the ``embed_model`` that embedded the entities."""

    embed_kg_nodes: bool = True
    embed_model: Dict[str, object] = {}


# -- the registry of struct types -----------------------------------------------------------------
# Every struct type an index store may hold; ``IndexStruct.from_json`` decodes their union by tag.
# More index kinds (TreeIndex's IndexGraph, KnowledgeGraphIndex's KG, ...) add their struct class
# here (or call register_index_struct at import of this module's importers, before loading).
_STRUCT_TYPES: List[Type[IndexStruct]] = [IndexDict, IndexList, KeywordTable, IndexGraph, KG, IndexLPG]
_UNION: Dict[Tuple[Type[IndexStruct], ...], Any] = {}


def register_index_struct(struct_type: Type[IndexStruct]) -> Type[IndexStruct]:
    """Make ``struct_type`` (a tagged :class:`IndexStruct` subclass) decodable by
    :meth:`IndexStruct.from_json`; returns it (usable as a class decorator).

    Raises:
        ValueError: ``struct_type`` is not an ``IndexStruct`` subclass with its own tag, or its tag is taken.
    """
    if not (isinstance(struct_type, type) and issubclass(struct_type, IndexStruct)):
        raise ValueError(f"struct_type must be an IndexStruct subclass, got {struct_type!r}")
    tag = struct_type.__struct_config__.tag
    if not isinstance(tag, str):
        raise ValueError(f"{struct_type.__name__} needs a tag (class X(IndexStruct, tag='...'))")
    for known in _STRUCT_TYPES:
        if known is struct_type:
            return struct_type
        if known.__struct_config__.tag == tag:
            raise ValueError(f"index struct tag {tag!r} is already used by {known.__name__}")
    _STRUCT_TYPES.append(struct_type)
    return struct_type


def _struct_union() -> Any:
    key = tuple(_STRUCT_TYPES)
    union = _UNION.get(key)
    if union is None:
        union = _UNION[key] = Union[key]
    return union
