"""``TreeSelectLeafEmbeddingRetriever``: walk a :class:`~ragloom.indices.tree.TreeIndex` down by
embedding similarity (LlamaIndex's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import numpy as np

from ragloom.indices.tree.select_leaf_retriever import TreeSelectLeafRetriever
from ragloom.indices.node_vectors import retriever_embed_model
from ragloom.schema import BaseNode, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.tree.base import TreeIndex

__all__ = ["TreeSelectLeafEmbeddingRetriever"]


class TreeSelectLeafEmbeddingRetriever(TreeSelectLeafRetriever):
    """The leaves reached from the roots by following, at each level, the ``child_branch_factor``
    nodes whose text is most similar to the query (cosine of ``embed_model`` vectors).  No LLM is
    called.  Results carry that similarity as their score, best first within each branch.

    Node vectors are computed at query time from each node's embed view and kept by the index per
    (model, node id) for later queries (ids are content-addressed: an edited chunk or a re-written
    summary has a new id).  Embeddings stored on nodes are not used (LlamaIndex uses them, whatever
    model made them).

    Args:
        embed_model: default the index's ``embed_model`` argument, else ``Settings.embed_model`` (the
            bundled model).
        child_branch_factor, query_template, …: as :class:`TreeSelectLeafRetriever` (the templates are
            not used here).
    """

    def __init__(self, index: "TreeIndex", embed_model: Any = None, query_template: Any = None,
                 text_qa_template: Any = None, refine_template: Any = None, query_template_multiple: Any = None,
                 child_branch_factor: int = 1, verbose: bool = False, callback_manager: Any = None,
                 object_map: Any = None, llm: Any = None) -> None:
        super().__init__(index, query_template=query_template, text_qa_template=text_qa_template,
                         refine_template=refine_template, query_template_multiple=query_template_multiple,
                         child_branch_factor=child_branch_factor, verbose=verbose,
                         callback_manager=callback_manager, object_map=object_map, llm=llm)
        self._embed_arg = embed_model

    @property
    def embed_model(self) -> Any:
        if self._embed_arg is not None:
            self._embed_arg = retriever_embed_model(self._embed_arg, self._index)
            return self._embed_arg
        return retriever_embed_model(None, self._index)

    def _node_vectors(self, model: Any, nodes: Sequence[BaseNode]) -> np.ndarray:
        return self._index._node_embeddings.vectors(model, nodes)

    def _choose(self, nodes: List[BaseNode], query_bundle: QueryBundle, level: int
                ) -> List[Tuple[BaseNode, Optional[float]]]:
        if not nodes:
            return []
        model = self.embed_model
        query = query_bundle.embedding
        if query is None:
            query = model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        q = np.asarray(query, dtype=np.float32)
        matrix = self._node_vectors(model, nodes)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
        scores = (matrix @ q) / np.where(norms == 0, 1.0, norms)
        order = sorted(range(len(nodes)), key=lambda i: (-float(scores[i]), i))[: self.child_branch_factor]
        return [(nodes[i], float(scores[i])) for i in order]
