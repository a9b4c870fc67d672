"""Retrievers of a :class:`~ragloom.indices.list.SummaryIndex` (LlamaIndex's names and arguments)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ragloom.prompts.mixin import PromptMixin
from ragloom.retrievers.base import BaseRetriever
from ragloom.indices.node_vectors import retriever_embed_model
from ragloom.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.list.base import SummaryIndex

__all__ = [
    "SummaryIndexRetriever",
    "SummaryIndexEmbeddingRetriever",
    "SummaryIndexLLMRetriever",
    "ListIndexRetriever",
    "ListIndexEmbeddingRetriever",
    "ListIndexLLMRetriever",
    "default_format_node_batch_fn",
    "default_parse_choice_select_answer_fn",
]


class SummaryIndexRetriever(BaseRetriever):
    """Every node of the index, in insertion order, unscored (``score=None``).

    ``callback_manager``, ``object_map`` and ``verbose`` are accepted for LlamaIndex compatibility.
    """

    def __init__(self, index: "SummaryIndex", callback_manager: Any = None, object_map: Any = None,
                 verbose: bool = False) -> None:
        self._index = index
        self.callback_manager = callback_manager
        self._verbose = verbose

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [NodeWithScore(node=n) for n in self._index._node_list()]


class SummaryIndexEmbeddingRetriever(BaseRetriever):
    """The ``similarity_top_k`` nodes most similar to the query (cosine), best first.

    Node vectors are computed at query time with ``embed_model`` (default: the index's, else
    ``Settings.embed_model``, the bundled model) from each node's embed view, and kept by the index
    per (model, node id) for later queries (node ids are content-addressed: an edited node has a new
    id); the model's persistent ``embed_cache``, when it has one, is used too.  Embeddings stored on
    nodes are not used (LlamaIndex uses them, whatever model made them).  Memory: 4 bytes per
    dimension per node (1.5 KB per node with a 384-d model).

    Raises:
        ValueError: ``similarity_top_k`` < 1.
    """

    def __init__(self, index: "SummaryIndex", similarity_top_k: int = 1, embed_model: Any = None,
                 callback_manager: Any = None, object_map: Any = None, verbose: bool = False) -> None:
        if not isinstance(similarity_top_k, int) or isinstance(similarity_top_k, bool) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        self._index = index
        self.similarity_top_k = similarity_top_k
        self._embed_arg = embed_model
        self.callback_manager = callback_manager
        self._verbose = verbose

    @property
    def embed_model(self) -> Any:
        if self._embed_arg is not None:
            self._embed_arg = retriever_embed_model(self._embed_arg, self._index)
            return self._embed_arg
        return retriever_embed_model(None, self._index)

    def _node_vectors(self, model: Any, nodes: Sequence[BaseNode]) -> np.ndarray:
        return self._index._node_embeddings.vectors(model, nodes)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        nodes = self._index._node_list()
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
        order = sorted(range(len(nodes)), key=lambda i: (-float(scores[i]), i))[: self.similarity_top_k]
        return [NodeWithScore(node=nodes[i], score=float(scores[i])) for i in order]


def default_format_node_batch_fn(summary_nodes: List[BaseNode]) -> str:
    """The documents of one LLM choice batch: ``"Document 1:\\n<text>"`` … (the LLM's view of each
    node, numbered from 1), separated by blank lines."""
    return "\n\n".join(
        f"Document {i}:\n{node.get_content(metadata_mode=MetadataMode.LLM)}" for i, node in enumerate(summary_nodes, 1)
    )


_DOC_RE = re.compile(r"(?:doc(?:ument)?|文档)\s*(?:number|no\.?|#)?\s*[:：=#]?\s*(\d+)", re.IGNORECASE)
_REL_RE = re.compile(r"(?:relevance|score|相关性|相关度)\s*(?:score)?\s*[:：=]?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def default_parse_choice_select_answer_fn(
    answer: str, num_choices: int, raise_error: bool = False
) -> Tuple[List[int], List[float]]:
    """``(document numbers, relevances)`` from an answer in the form of
    :data:`~ragloom.prompts.index_prompts.DEFAULT_CHOICE_SELECT_PROMPT` (``Doc: 2, Relevance: 8`` per
    line).

    Tolerant: any line naming a document (``Doc 2``, ``Document: 2``, ``文档 2``) counts, a missing
    relevance counts as 1.0, numbers outside ``1..num_choices`` and repeats are dropped (the first
    mention wins), and text around the lines (explanations, bullets, markdown) is ignored.  LlamaIndex
    raises on most of these.

    Raises:
        ValueError: with ``raise_error``, a line that names a document outside ``1..num_choices``.
    """
    nums: List[int] = []
    rels: List[float] = []
    for line in answer.splitlines():
        doc = _DOC_RE.search(line)
        if doc is None:
            continue
        num = int(doc.group(1))
        if not 1 <= num <= num_choices:
            if raise_error:
                raise ValueError(f"the LLM chose document {num}, outside 1..{num_choices}: {line!r}")
            continue
        if num in nums:
            continue
        rel = _REL_RE.search(line[doc.end():]) or _REL_RE.search(line)
        nums.append(num)
        rels.append(float(rel.group(1)) if rel else 1.0)
    return nums, rels


class SummaryIndexLLMRetriever(BaseRetriever, PromptMixin):
    """Nodes an LLM picks as relevant, with its relevance score (1–10), best first.

    The nodes are shown to the LLM ``choice_batch_size`` at a time (one call per batch) with
    ``choice_select_prompt`` (variables ``context_str`` — the numbered documents — and ``query_str``);
    :func:`default_parse_choice_select_answer_fn` reads the answer.  LlamaIndex returns the choices
    batch by batch in the LLM's order; ragloom sorts all of them by relevance (stable).

    Args:
        index: the index.
        llm: default: the index's LLM, else ``Settings.llm``.
        choice_select_prompt: a :class:`~ragloom.prompts.PromptTemplate` or a string.
        choice_batch_size: nodes per LLM call (>= 1).
        format_node_batch_fn: ``fn(nodes) -> str`` building ``context_str``.
        parse_choice_select_answer_fn: ``fn(answer, num_choices) -> (numbers, relevances)``,
            numbers 1-based within the batch.

    Raises:
        ValueError: ``choice_batch_size`` < 1, a prompt without ``context_str`` / ``query_str``, or
            no LLM configured (when retrieving).
    """

    def __init__(
        self,
        index: "SummaryIndex",
        llm: Any = None,
        choice_select_prompt: Any = None,
        choice_batch_size: int = 10,
        format_node_batch_fn: Optional[Callable[[List[BaseNode]], str]] = None,
        parse_choice_select_answer_fn: Optional[Callable[[str, int], Tuple[List[int], List[float]]]] = None,
        callback_manager: Any = None,
        object_map: Any = None,
        verbose: bool = False,
    ) -> None:
        from ragloom.prompts.base import check_vars, to_prompt
        from ragloom.prompts.index_prompts import DEFAULT_CHOICE_SELECT_PROMPT

        if not isinstance(choice_batch_size, int) or isinstance(choice_batch_size, bool) or choice_batch_size < 1:
            raise ValueError(f"choice_batch_size must be an int >= 1, got {choice_batch_size!r}")
        prompt = DEFAULT_CHOICE_SELECT_PROMPT if choice_select_prompt is None else to_prompt(
            choice_select_prompt, "choice_select_prompt")
        check_vars(prompt, ["context_str", "query_str"], "choice_select_prompt")
        self._index = index
        self._llm_arg = llm
        self._choice_select_prompt = prompt
        self._choice_batch_size = choice_batch_size
        self._format_node_batch_fn = format_node_batch_fn or default_format_node_batch_fn
        self._parse_choice_select_answer_fn = parse_choice_select_answer_fn or default_parse_choice_select_answer_fn
        self.callback_manager = callback_manager
        self._verbose = verbose

    @property
    def llm(self) -> Any:
        if self._llm_arg is not None:
            from ragloom.response_synthesizers.base import llm_or_default

            return llm_or_default(self._llm_arg)
        return self._index.llm

    def _get_prompts(self) -> Dict[str, Any]:
        return {"choice_select_prompt": self._choice_select_prompt}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        from ragloom.prompts.base import check_vars, to_prompt

        if "choice_select_prompt" in prompts:
            prompt = to_prompt(prompts["choice_select_prompt"], "choice_select_prompt")
            check_vars(prompt, ["context_str", "query_str"], "choice_select_prompt")
            self._choice_select_prompt = prompt

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        nodes = self._index._node_list()
        if not nodes:
            return []
        llm = self.llm
        chosen: List[NodeWithScore] = []
        size = self._choice_batch_size
        for start in range(0, len(nodes), size):
            batch = nodes[start : start + size]
            answer = llm.predict(self._choice_select_prompt, context_str=self._format_node_batch_fn(batch),
                                 query_str=query_bundle.query_str)
            nums, rels = self._parse_choice_select_answer_fn(answer, len(batch))
            for num, rel in zip(nums, rels, strict=False):
                if 1 <= num <= len(batch):
                    chosen.append(NodeWithScore(node=batch[num - 1], score=float(rel)))
        chosen.sort(key=lambda n: -(n.score or 0.0))
        return chosen


#: LlamaIndex's older names.
ListIndexRetriever = SummaryIndexRetriever
ListIndexEmbeddingRetriever = SummaryIndexEmbeddingRetriever
ListIndexLLMRetriever = SummaryIndexLLMRetriever
