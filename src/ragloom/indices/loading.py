"""``load_index_from_storage``: reopen an index persisted with ``storage_context.persist()``."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Type, Union

from ragloom.data_structs import KG, IndexDict, IndexGraph, IndexList, IndexLPG, IndexStruct, KeywordTable

#: What reopens each struct type: ``"module:Class"``, or a function of the struct returning such a
#: string (one struct type shared by several classes).  New index kinds add theirs with
#: :func:`register_index_class`.
IndexClassSpec = Union[str, Callable[[IndexStruct], str]]


def _keyword_table_class(struct: IndexStruct) -> str:
    """The keyword table classes share one struct; ``extractor`` tells them apart."""
    extractor = struct.extractor if isinstance(struct, KeywordTable) else "llm"
    return {
        "simple": "ragloom.indices.keyword_table.simple_base:SimpleKeywordTableIndex",
        "rake": "ragloom.indices.keyword_table.rake_base:RAKEKeywordTableIndex",
    }.get(extractor, "ragloom.indices.keyword_table.base:KeywordTableIndex")


_INDEX_CLASSES: Dict[Type[IndexStruct], IndexClassSpec] = {
    IndexDict: "ragloom.indices.vector_store:VectorStoreIndex",
    IndexList: "ragloom.indices.list.base:SummaryIndex",
    KeywordTable: _keyword_table_class,
    IndexGraph: "ragloom.indices.tree.base:TreeIndex",
    KG: "ragloom.indices.knowledge_graph.base:KnowledgeGraphIndex",
    IndexLPG: "ragloom.indices.property_graph.base:PropertyGraphIndex",
}


def register_index_class(struct_type: Type[IndexStruct], spec: IndexClassSpec) -> None:
    """Make :func:`load_index_from_storage` reopen structs of ``struct_type`` with the class ``spec``
    names (``"package.module:Class"``, imported when first needed, or a function of the struct giving
    such a string).  The struct type must also be in :mod:`ragloom.data_structs`' registry
    (:func:`~ragloom.data_structs.register_index_struct`).

    Raises:
        ValueError: ``struct_type`` is not an ``IndexStruct`` subclass.
    """
    if not (isinstance(struct_type, type) and issubclass(struct_type, IndexStruct)):
        raise ValueError(f"struct_type must be an IndexStruct subclass, got {struct_type!r}")
    _INDEX_CLASSES[struct_type] = spec


def index_class_for(struct: IndexStruct) -> Any:
    """The index class that reopens ``struct``.

    Raises:
        ValueError: no class is registered for its type.
    """
    spec = _INDEX_CLASSES.get(type(struct))
    if spec is None:
        raise ValueError(f"unsupported index struct type {type(struct).__name__}")
    target = spec if isinstance(spec, str) else spec(struct)
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def load_indices_from_storage(
    storage_context: Any, index_ids: Optional[Sequence[str]] = None, **kwargs: Any
) -> List[Any]:
    """All indexes (or those named in ``index_ids``) in ``storage_context``; ``kwargs`` go to the index
    constructor (e.g. ``embed_model``), each index is reopened as the class registered for its struct
    type (:func:`register_index_class`)."""
    if index_ids is None:
        structs = list(storage_context.index_store.index_structs())
    else:
        structs = []
        for index_id in index_ids:
            struct = storage_context.index_store.get_index_struct(index_id)
            if struct is None:
                raise ValueError(f"no index with index_id={index_id!r} in this storage context")
            structs.append(struct)
    out = []
    for struct in structs:
        cls = index_class_for(struct)
        out.append(cls(index_struct=struct, storage_context=storage_context, **kwargs))
    return out


def load_index_from_storage(storage_context: Any, index_id: Optional[str] = None, **kwargs: Any) -> Any:
    """The index in ``storage_context`` (or the one named ``index_id``).  An index loaded from a folder
    keeps its query vectors in ``embed_cache.sqlite`` there (a repeated query costs a lookup).

    Raises:
        ValueError: no index is stored, or several are and ``index_id`` is not given.
    """
    indices = load_indices_from_storage(storage_context, index_ids=None if index_id is None else [index_id], **kwargs)
    if not indices:
        raise ValueError("no index found in this storage context (was it persisted?)")
    if len(indices) > 1:
        ids = ", ".join(i.index_id for i in indices)
        raise ValueError(f"several indexes are stored ({ids}); pass index_id= to choose one")
    index = indices[0]
    from ragloom.indices.vector_store import VectorStoreIndex

    if storage_context.persist_dir is not None and isinstance(index, VectorStoreIndex):
        from ragloom.embeddings.cache import attach_query_cache

        attach_query_cache(index.embed_model, storage_context.persist_dir)  # repeated queries cost a lookup
    return index
