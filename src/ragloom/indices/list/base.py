"""``SummaryIndex`` (alias ``ListIndex``): every node of the documents, in order (LlamaIndex's)."""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, List, Sequence

import msgspec

from ragloom.data_structs import IndexList
from ragloom.indices.base import BaseIndex
from ragloom.indices.node_vectors import NodeVectorCache
from ragloom.schema import BaseNode

__all__ = ["SummaryIndex", "ListIndex", "GPTListIndex", "ListRetrieverMode", "SummaryRetrieverMode"]


class ListRetrieverMode(str, Enum):
    """Retriever modes of a :class:`SummaryIndex` (LlamaIndex's names)."""

    DEFAULT = "default"
    EMBEDDING = "embedding"
    LLM = "llm"


#: LlamaIndex's newer name for :class:`ListRetrieverMode`.
SummaryRetrieverMode = ListRetrieverMode


class SummaryIndex(BaseIndex[IndexList]):
    """An index that keeps its nodes as one list, in insertion order (LlamaIndex's ``SummaryIndex``).

    Building it calls no model.  Querying reads *every* node (``retriever_mode="default"``) — for
    summaries of a whole corpus — or picks some with embeddings (``"embedding"``) or an LLM
    (``"llm"``).  Arguments: see :class:`~ragloom.indices.base.BaseIndex`.

    Differences from LlamaIndex: the node list lives in the index store's node table, not in the
    struct's JSON (a write costs O(batch)); ``as_query_engine`` defaults to
    ``response_mode="tree_summarize"`` (LlamaIndex's default is ``compact``; its documentation
    recommends ``tree_summarize`` for this index, and a summary of many nodes is what it is for).
    """

    index_struct_cls: ClassVar[Any] = IndexList
    default_response_mode: ClassVar[str] = "tree_summarize"
    retriever_accepts_llm: ClassVar[bool] = True

    def __init__(self, nodes: Sequence[BaseNode] | None = None, objects: Sequence[Any] | None = None,
                 index_struct: IndexList | None = None, show_progress: bool = False, **kwargs: Any) -> None:
        #: query-time node embeddings, by (embed model namespace, node id): see SummaryIndexEmbeddingRetriever
        self._node_embeddings = NodeVectorCache()  # for the embedding retriever
        super().__init__(nodes=nodes, objects=objects, index_struct=index_struct, show_progress=show_progress,
                         **kwargs)

    def _materialize_struct(self) -> IndexList:
        return msgspec.structs.replace(self._index_struct, nodes=self._node_ids())

    def as_retriever(self, retriever_mode: Any = ListRetrieverMode.DEFAULT, llm: Any = None,
                     embed_model: Any = None, **kwargs: Any) -> Any:
        """A retriever of this index.

        Args:
            retriever_mode: ``"default"`` (:class:`SummaryIndexRetriever`, every node in order),
                ``"embedding"`` (:class:`SummaryIndexEmbeddingRetriever`: ``similarity_top_k``,
                ``embed_model``) or ``"llm"`` (:class:`SummaryIndexLLMRetriever`:
                ``choice_select_prompt``, ``choice_batch_size``, ``llm``).
            **kwargs: the retriever's arguments.

        Raises:
            ValueError: unknown ``retriever_mode`` (lists the allowed ones) or bad retriever arguments.
        """
        from ragloom.indices.list.retrievers import (
            SummaryIndexEmbeddingRetriever,
            SummaryIndexLLMRetriever,
            SummaryIndexRetriever,
        )

        try:
            mode = ListRetrieverMode(retriever_mode)
        except ValueError:
            allowed = ", ".join(m.value for m in ListRetrieverMode)
            raise ValueError(f"retriever_mode must be one of {allowed}, got {retriever_mode!r}") from None
        if mode == ListRetrieverMode.DEFAULT:
            return SummaryIndexRetriever(self, **kwargs)
        if mode == ListRetrieverMode.EMBEDDING:
            return SummaryIndexEmbeddingRetriever(self, embed_model=embed_model, **kwargs)
        return SummaryIndexLLMRetriever(self, llm=llm, **kwargs)

    def _node_list(self) -> List[BaseNode]:
        """Every node of the index, in order (those still in the docstore)."""
        return self._get_nodes(self._node_ids())


#: LlamaIndex's older names.
ListIndex = SummaryIndex
GPTListIndex = SummaryIndex
