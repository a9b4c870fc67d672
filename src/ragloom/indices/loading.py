"""``load_index_from_storage``: reopen an index persisted with ``storage_context.persist()``."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ragloom.data_structs import IndexDict


def load_indices_from_storage(
    storage_context: Any, index_ids: Optional[Sequence[str]] = None, **kwargs: Any
) -> List[Any]:
    """All indexes (or those named in ``index_ids``) in ``storage_context``; ``kwargs`` go to the index
    constructor (e.g. ``embed_model``)."""
    from ragloom.indices.vector_store import VectorStoreIndex

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
        if not isinstance(struct, IndexDict):
            raise ValueError(f"unsupported index struct type {type(struct).__name__}")
        out.append(VectorStoreIndex(index_struct=struct, storage_context=storage_context, **kwargs))
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
