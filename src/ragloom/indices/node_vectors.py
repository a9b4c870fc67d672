"""Vectors of an index's nodes, computed on first use: what the embedding retrievers of index kinds
without a vector store (``SummaryIndex``'s ``embedding`` mode, ``TreeIndex``'s
``select_leaf_embedding``) score against the query."""

from __future__ import annotations

from typing import Any, Dict, Sequence, Set, Tuple

import numpy as np

from ragloom.schema import BaseNode, MetadataMode

__all__ = ["NodeVectorCache", "retriever_embed_model"]


class NodeVectorCache:
    """``(embed model namespace, node id) → float32 vector`` in memory, for one index object.

    About 4 bytes × dimension per node and model (1.5 KB with the bundled model); it lives as long
    as the index object and is not persisted (the embed model's own query/embedding cache may still
    spare the model run).
    """

    def __init__(self) -> None:
        self._vectors: Dict[Tuple[str, str], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._vectors)

    def keys(self) -> Set[Tuple[str, str]]:
        """The ``(embed model namespace, node id)`` pairs held."""
        return set(self._vectors)

    def vectors(self, model: Any, nodes: Sequence[BaseNode]) -> np.ndarray:
        """Shape ``(len(nodes), dim)``: each node's embedding of its embed view by ``model``; the
        nodes not seen before with this model are embedded in one batch."""
        from ragloom.embeddings.cache import namespace_of

        space = namespace_of(model.cache_identity())
        missing = [n for n in nodes if (space, n.node_id) not in self._vectors]
        if missing:
            texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in missing]
            computed = np.asarray(model.get_text_embedding_batch_array(texts), dtype=np.float32)
            for node, vector in zip(missing, computed, strict=True):
                self._vectors[(space, node.node_id)] = vector
        return np.stack([self._vectors[(space, n.node_id)] for n in nodes])


def retriever_embed_model(given: Any, index: Any) -> Any:
    """The embed model a retriever uses: ``given`` (a model or a
    :func:`~ragloom.embeddings.resolve_embed_model` specification), else the index's ``embed_model``."""
    if given is None:
        return index.embed_model
    from ragloom.embeddings import resolve_embed_model

    return resolve_embed_model(given)
