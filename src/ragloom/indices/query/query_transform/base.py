"""``BaseQueryTransform``, ``IdentityQueryTransform`` and ``HyDEQueryTransform`` (LlamaIndex names
and arguments).

HyDE (Hypothetical Document Embeddings; Gao, Ma, Lin and Callan, "Precise Zero-Shot Dense Retrieval
without Relevance Labels", 2022, arXiv:2212.10496): an LLM writes a passage that would answer the
query, and dense retrieval searches with the passage's embedding, which sits nearer real answer
passages than the short question's.  The paper averages the embeddings of several generated
passages and the query; LlamaIndex (and ragloom) write one passage and, with
``include_original=True``, average its embedding with the query's.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from typing import Any, Dict, Optional, Union

from ragloom.prompts.base import PromptTemplate, to_prompt
from ragloom.prompts.mixin import PromptMixin
from ragloom.schema import QueryBundle

logger = logging.getLogger(__name__)

__all__ = [
    "BaseQueryTransform",
    "IdentityQueryTransform",
    "HyDEQueryTransform",
    "DEFAULT_HYDE_PROMPT_TMPL",
    "DEFAULT_HYDE_PROMPT",
]

#: ragloom's own wording; the question is ``{context_str}``, LlamaIndex's variable for it, so a
#: LlamaIndex HyDE template drops in (a template may also use ``{query_str}``: both are given)
DEFAULT_HYDE_PROMPT_TMPL = (
    "Write one passage, as it might appear in a document, that answers the question below. "
    "State concrete facts, names and terms the way such a document would; do not mention the "
    "question, and write in the language of the question.\n"
    "Question: {context_str}\n"
    "Passage: "
)
DEFAULT_HYDE_PROMPT = PromptTemplate(DEFAULT_HYDE_PROMPT_TMPL, prompt_type="summary")


def _to_bundle(query: Union[str, QueryBundle]) -> QueryBundle:
    # imported here: ragloom.query_engine imports this module (TransformQueryEngine)
    from ragloom.query_engine.base import to_query_bundle

    return to_query_bundle(query)


class BaseQueryTransform(PromptMixin):
    """Rewrites a query before it is run; subclasses implement :meth:`_run`.

    ``transform(query)`` is ``transform.run(query)``.
    """

    @abstractmethod
    def _run(self, query_bundle: QueryBundle, metadata: Dict[str, Any]) -> QueryBundle: ...

    def run(
        self, query_bundle_or_str: Union[str, QueryBundle], metadata: Optional[Dict[str, Any]] = None
    ) -> QueryBundle:
        """The transformed query (a new :class:`QueryBundle`; the input is not modified).

        Raises:
            ValueError: the query is neither a ``str`` nor a ``QueryBundle``.
        """
        return self._run(_to_bundle(query_bundle_or_str), dict(metadata or {}))

    def __call__(
        self, query_bundle_or_str: Union[str, QueryBundle], metadata: Optional[Dict[str, Any]] = None
    ) -> QueryBundle:
        return self.run(query_bundle_or_str, metadata)

    async def arun(
        self, query_bundle_or_str: Union[str, QueryBundle], metadata: Optional[Dict[str, Any]] = None
    ) -> QueryBundle:
        """As :meth:`run`, async (default: :meth:`run` in a worker thread)."""
        return await asyncio.to_thread(self.run, query_bundle_or_str, metadata)


class IdentityQueryTransform(BaseQueryTransform):
    """Leaves the query as it is."""

    def _run(self, query_bundle: QueryBundle, metadata: Dict[str, Any]) -> QueryBundle:
        return query_bundle


class HyDEQueryTransform(BaseQueryTransform):
    """Search with the embedding of an LLM-written answer passage (HyDE, see the module docstring).

    ``run(q)`` asks the LLM once (``hyde_prompt`` with the question as ``context_str`` and
    ``query_str``) and returns ``QueryBundle(query_str=q, custom_embedding_strs=[passage, q])``
    (``[passage]`` alone with ``include_original=False``; the original's own ``embedding_strs``
    when it already had custom ones).  The query string itself is unchanged, so keyword search
    (BM25, the keyword side of hybrid search) and the answer prompt still use the question.
    ``VectorIndexRetriever`` embeds every embedding string as a query and searches with their
    mean (``BaseEmbedding.get_agg_embedding_from_queries``).

    Notes:
        - Where hybrid search would skip the dense side (a mostly-Chinese query with an
          English-only embed model, see ``VectorIndexRetriever``), the passage is not used.
        - An empty passage (the LLM wrote nothing) is left out with a warning: the query is then
          searched as it is (ragloom; LlamaIndex would embed the empty string).

    Args:
        llm: the model (default ``Settings.llm``).
        hyde_prompt: a ``PromptTemplate`` or string with ``{context_str}`` or ``{query_str}``.
        include_original: also embed the original query (the mean of both embeddings is searched).

    Raises:
        ValueError: no LLM is configured; the prompt has neither variable.
    """

    def __init__(self, llm: Any = None, hyde_prompt: Any = None, include_original: bool = True) -> None:
        from ragloom.response_synthesizers.base import llm_or_default

        self._llm = llm_or_default(llm)
        self._hyde_prompt = self._checked(hyde_prompt if hyde_prompt is not None else DEFAULT_HYDE_PROMPT)
        self._include_original = bool(include_original)

    @staticmethod
    def _checked(prompt: Any) -> PromptTemplate:
        prompt = to_prompt(prompt, "hyde_prompt")
        if not {"context_str", "query_str"} & set(prompt.template_vars):
            raise ValueError("hyde_prompt must contain the variable context_str (or query_str) for the question")
        return prompt

    @property
    def llm(self) -> Any:
        return self._llm

    def _get_prompts(self) -> Dict[str, Any]:
        return {"hyde_prompt": self._hyde_prompt}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        if "hyde_prompt" in prompts:
            self._hyde_prompt = self._checked(prompts["hyde_prompt"])

    def _bundle(self, query_bundle: QueryBundle, passage: str) -> QueryBundle:
        strs = [passage] if passage.strip() else []
        if not strs:
            logger.warning("HyDE: the LLM wrote an empty passage; searching with the query alone")
        if self._include_original or not strs:
            strs.extend(query_bundle.embedding_strs)
        return QueryBundle(query_str=query_bundle.query_str, image_path=query_bundle.image_path,
                           custom_embedding_strs=strs)

    def _run(self, query_bundle: QueryBundle, metadata: Dict[str, Any]) -> QueryBundle:
        q = query_bundle.query_str
        passage = self._llm.predict(self._hyde_prompt, context_str=q, query_str=q)
        return self._bundle(query_bundle, passage)

    async def arun(
        self, query_bundle_or_str: Union[str, QueryBundle], metadata: Optional[Dict[str, Any]] = None
    ) -> QueryBundle:
        """As :meth:`run`, with ``LLM.apredict``."""
        bundle = _to_bundle(query_bundle_or_str)
        q = bundle.query_str
        passage = await self._llm.apredict(self._hyde_prompt, context_str=q, query_str=q)
        return self._bundle(bundle, passage)
