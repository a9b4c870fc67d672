"""``KGTableRetriever``: retrieval over a :class:`~ragloom.indices.knowledge_graph.KnowledgeGraphIndex`
(LlamaIndex's)."""

from __future__ import annotations

import logging
from enum import Enum
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Tuple

from ragloom.graph_stores.types import entity_key
from ragloom.indices.knowledge_graph.base import WORD_KEY_PREFIX
from ragloom.indices.knowledge_graph.utils import triplet_text
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle, TextNode

if TYPE_CHECKING:
    from ragloom.indices.knowledge_graph.base import KnowledgeGraphIndex

logger = logging.getLogger(__name__)

__all__ = [
    "KGRetrieverMode",
    "KGTableRetriever",
    "DEFAULT_NODE_SCORE",
    "GLOBAL_EXPLORE_NODE_LIMIT",
    "REL_TEXT_LIMIT",
]

Triple = Tuple[str, str, str]

#: LlamaIndex's score of every node this retriever returns (not a similarity: high, so that a
#: similarity cut-off postprocessor keeps them)
DEFAULT_NODE_SCORE = 1000.0
#: nodes of one query keyword counted (LlamaIndex's limit)
GLOBAL_EXPLORE_NODE_LIMIT = 3
#: LlamaIndex's default ``max_knowledge_sequence``
REL_TEXT_LIMIT = 30

_KEYWORD_MODES = ("llm", "simple")


class KGRetrieverMode(str, Enum):
    """How :class:`KGTableRetriever` finds triplets (LlamaIndex's names).

    * ``keyword``: the graph paths starting at the entities the query names;
    * ``embedding``: the ``similarity_top_k`` triplets whose text is closest to the query (needs an
      index built with ``include_embeddings=True``);
    * ``hybrid``: both.
    """

    KEYWORD = "keyword"
    EMBEDDING = "embedding"
    HYBRID = "hybrid"


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


class KGTableRetriever(BaseRetriever):
    """Triplets (and optionally the chunks they came from) relevant to a query.

    1. Keywords of the query: the LLM (``query_keyword_extract_template``, answer ``KEYWORDS: a, b``;
       ``keyword_mode="llm"``, as LlamaIndex) or, offline, :func:`ragloom.keywords.simple_extract_keywords`
       (``keyword_mode="simple"``: no model; Chinese segmented by jieba).
    2. Each keyword names entities: one whose name matches it (case-insensitive, NFKC), else the
       entities one of whose words (or Chinese sub-words) it is (``"Curie"`` finds ``"Marie Curie"``).
       The paths of up to ``graph_store_query_depth`` hops from them (``graph_store.get_rel_map``)
       are the keyword triplets; the first :data:`GLOBAL_EXPLORE_NODE_LIMIT` chunks keyed by the
       keyword count as hits (``include_text``).
    3. ``embedding`` / ``hybrid``: the ``similarity_top_k`` triplets nearest the query (cosine).
    4. At most ``max_knowledge_sequence`` triplets are kept; with ``include_text`` the chunks keyed by
       their subjects and objects count as hits too.

    Returns the ``num_chunks_per_query`` chunks with the most hits (score
    :data:`DEFAULT_NODE_SCORE`, LlamaIndex's), then — when triplets were found — one ``TextNode``
    listing them (``subject -[relation]-> object`` lines; metadata ``kg_rel_texts`` and
    ``kg_rel_map``, hidden from the LLM and embed views).  Nothing found: ``[]`` (LlamaIndex returns
    a node reading "No relationships found.", which a synthesizer would answer from).

    Args:
        index: the knowledge graph index.
        llm: for ``keyword_mode="llm"`` (default: the index's).
        embed_model: for the query in ``embedding`` / ``hybrid`` mode (default: the index's).
        query_keyword_extract_template: takes ``question`` and ``max_keywords`` (default
            :data:`~ragloom.prompts.index_prompts.DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE`).
        max_keywords_per_query: >= 1 (default 10).
        num_chunks_per_query: chunks returned at most, >= 1 (default 10).
        include_text: return chunks as well as triplets (default ``True``).
        retriever_mode: a :class:`KGRetrieverMode` value (default ``"keyword"``).
        similarity_top_k: triplets taken by embedding, >= 1 (default 2).
        graph_store_query_depth: hops of the paths, >= 1 (default 2).
        use_global_node_triplets: also start paths at the other entities of the chunks a keyword
            found (ragloom reads them from the graph; LlamaIndex asks the LLM for keywords of each
            chunk again).
        max_knowledge_sequence: triplets kept at most, >= 1 (default 30).
        keyword_mode: ``"llm"`` (default) or ``"simple"`` (ragloom's: offline keywords).
        callback_manager, object_map, verbose: accepted for LlamaIndex compatibility.

    Raises:
        ValueError: an argument out of range, an unknown ``retriever_mode`` / ``keyword_mode`` (the
            message lists the allowed values), or a template without its variables.
    """

    def __init__(
        self,
        index: "KnowledgeGraphIndex",
        llm: Any = None,
        embed_model: Any = None,
        query_keyword_extract_template: Any = None,
        max_keywords_per_query: int = 10,
        num_chunks_per_query: int = 10,
        include_text: bool = True,
        retriever_mode: Any = KGRetrieverMode.KEYWORD,
        similarity_top_k: int = 2,
        graph_store_query_depth: int = 2,
        use_global_node_triplets: bool = False,
        max_knowledge_sequence: int = REL_TEXT_LIMIT,
        keyword_mode: str = "llm",
        callback_manager: Any = None,
        object_map: Any = None,
        verbose: bool = False,
    ) -> None:
        from ragloom.prompts.index_prompts import DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE

        for name, value in (("max_keywords_per_query", max_keywords_per_query),
                            ("num_chunks_per_query", num_chunks_per_query), ("similarity_top_k", similarity_top_k),
                            ("graph_store_query_depth", graph_store_query_depth),
                            ("max_knowledge_sequence", max_knowledge_sequence)):
            _check_int(name, value, 1)
        try:
            self._retriever_mode = KGRetrieverMode(retriever_mode if retriever_mode is not None else "keyword")
        except ValueError:
            allowed = ", ".join(m.value for m in KGRetrieverMode)
            raise ValueError(f"retriever_mode must be one of {allowed}, got {retriever_mode!r}") from None
        if keyword_mode not in _KEYWORD_MODES:
            raise ValueError(f"keyword_mode must be one of {', '.join(_KEYWORD_MODES)}, got {keyword_mode!r}")
        self._index = index
        self.query_keyword_extract_template = to_prompt(
            query_keyword_extract_template or DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE, "query_keyword_extract_template")
        check_vars(self.query_keyword_extract_template, ["question"], "query_keyword_extract_template")
        self.max_keywords_per_query = max_keywords_per_query
        self.num_chunks_per_query = num_chunks_per_query
        self._include_text = bool(include_text)
        self.similarity_top_k = similarity_top_k
        self.graph_store_query_depth = graph_store_query_depth
        self.use_global_node_triplets = bool(use_global_node_triplets)
        self.max_knowledge_sequence = max_knowledge_sequence
        self.keyword_mode = keyword_mode
        self._llm_arg = llm
        self._embed_arg = embed_model
        self.callback_manager = callback_manager
        self._verbose = verbose

    # -- keywords ------------------------------------------------------------------------------------
    def _get_keywords(self, query_str: str) -> List[str]:
        """The query's keywords (see the class docstring), at most ``max_keywords_per_query``."""
        from ragloom.keywords import extract_keywords_given_response, simple_extract_keywords

        if self.keyword_mode == "simple":
            return simple_extract_keywords(query_str, self.max_keywords_per_query)
        llm = self._llm_arg if self._llm_arg is not None else self._index.llm
        prompt = self.query_keyword_extract_template
        if "max_keywords" in prompt.template_vars:
            prompt = prompt.partial_format(max_keywords=self.max_keywords_per_query)
        response = str(llm.predict(prompt, question=query_str))
        found = extract_keywords_given_response(response, lowercase=False, start_token="KEYWORDS:")
        return found[: self.max_keywords_per_query]

    def _postings(self, keys: Sequence[str]) -> Dict[str, List[str]]:
        return self._index.storage_context.index_store.get_postings(self._index.index_id, list(keys))

    def _match(self, keyword: str) -> Tuple[List[str], List[str]]:
        """``(entity names, node ids)`` a keyword names (see the class docstring)."""
        from ragloom.keywords import expand_with_subtokens, keyword_key

        exact = self._postings([entity_key(keyword)]).get(entity_key(keyword), [])
        if exact:
            return [keyword], list(exact)
        words = {keyword_key(w) for w in expand_with_subtokens([keyword])} - {""}
        if not words:
            return [], []
        hits = self._postings([WORD_KEY_PREFIX + w for w in sorted(words)])
        node_ids = list(dict.fromkeys(n for ids in hits.values() for n in ids))
        names: Dict[str, None] = {}
        graph = self._index.graph_store
        for node_id in node_ids:
            for subj, _, obj in graph.triplets_of_source(node_id):
                for name in (subj, obj):
                    if words & {keyword_key(w) for w in expand_with_subtokens([name])}:
                        names.setdefault(name)
        return list(names), node_ids

    # -- retrieval --------------------------------------------------------------------------------------
    def _keyword_triplets(self, keywords: List[str], hits: Dict[str, int], rel_map: Dict[str, List[List[str]]]
                          ) -> List[Triple]:
        graph = self._index.graph_store
        found: List[Triple] = []
        for keyword in keywords:
            names, node_ids = self._match(keyword)
            starts = dict.fromkeys(names)
            for node_id in node_ids[:GLOBAL_EXPLORE_NODE_LIMIT]:
                if self._include_text and node_id not in hits:
                    hits[node_id] = 1
                if self.use_global_node_triplets:
                    for subj, _, obj in graph.triplets_of_source(node_id):
                        starts.setdefault(subj)
                        starts.setdefault(obj)
            if not starts:
                continue
            paths = graph.get_rel_map(list(starts), self.graph_store_query_depth)
            for subj, rows in paths.items():
                rel_map.setdefault(subj, []).extend(rows)
                found.extend((r[0], r[1], r[2]) for r in rows)
        return found

    def _embedding_triplets(self, query_bundle: QueryBundle) -> List[Triple]:
        index = self._index
        if not index.include_embeddings:
            logger.warning("retriever_mode=%s: this index was built without include_embeddings=True; only "
                           "keywords are used", self._retriever_mode.value)
            return []
        model = index.embed_model if self._embed_arg is None else self._query_model()
        query = query_bundle.embedding
        if query is None:
            query = model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        found = index.graph_store.query_embeddings(index._vector_space(), query, self.similarity_top_k)
        return [t for t, _ in found]

    def _query_model(self) -> Any:
        from ragloom.embeddings import check_embed_model, resolve_embed_model

        model = resolve_embed_model(self._embed_arg)
        check_embed_model(dict(self._index._index_struct.embed_model or {}), model)
        return model

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        hits: Dict[str, int] = {}
        rel_map: Dict[str, List[List[str]]] = {}
        triplets: List[Triple] = []
        if self._retriever_mode != KGRetrieverMode.EMBEDDING:
            keywords = self._get_keywords(query_bundle.query_str)
            logger.debug("KG query keywords: %s", keywords)
            triplets += self._keyword_triplets(keywords, hits, rel_map)
        if self._retriever_mode != KGRetrieverMode.KEYWORD:
            triplets += self._embedding_triplets(query_bundle)
        unique: Dict[Tuple[str, str, str], Triple] = {}
        for t in triplets:
            unique.setdefault((entity_key(t[0]), entity_key(t[1]), entity_key(t[2])), t)
        kept = list(unique.values())[: self.max_knowledge_sequence]
        if self._include_text and kept:
            names = list(dict.fromkeys(name for s, _, o in kept for name in (s, o)))
            postings = self._postings([entity_key(n) for n in names])
            for node_ids in postings.values():
                for node_id in node_ids:
                    hits[node_id] = hits.get(node_id, 0) + 1
        ranked = sorted(hits, key=lambda n: -hits[n])[: self.num_chunks_per_query]  # stable: first hit first
        out = [NodeWithScore(node=n, score=DEFAULT_NODE_SCORE) for n in self._index._get_nodes(ranked)]
        if kept:
            out.append(NodeWithScore(node=self._triplets_node(kept, rel_map), score=DEFAULT_NODE_SCORE))
        return out

    def _triplets_node(self, triplets: List[Triple], rel_map: Dict[str, List[List[str]]]) -> TextNode:
        lines = [f"{s} -[{r}]-> {o}" for s, r, o in triplets]
        text = (f"Knowledge graph facts (paths of at most {self.graph_store_query_depth} steps), one per line "
                "as 'subject -[relation]-> object':\n" + "\n".join(lines))
        hidden = ["kg_rel_texts", "kg_rel_map"]
        metadata = {"kg_rel_texts": [triplet_text(t) for t in triplets], "kg_rel_map": rel_map}
        return TextNode(text=text, metadata=metadata, excluded_embed_metadata_keys=hidden,
                        excluded_llm_metadata_keys=hidden)

