"""Keyword table indexes (LlamaIndex's ``llama_index.core.indices.keyword_table``).

A keyword table maps keywords to the nodes they were extracted from; a query's keywords select the
nodes that share most of them.  Three ways to extract keywords, one class each:

* :class:`KeywordTableIndex`: an LLM (``keyword_extract_template``), one call per node at build time;
* :class:`~ragloom.indices.keyword_table.simple_base.SimpleKeywordTableIndex`: the most frequent
  content words (:func:`ragloom.keywords.simple_extract_keywords`), no model;
* :class:`~ragloom.indices.keyword_table.rake_base.RAKEKeywordTableIndex`: RAKE keyphrases
  (:func:`ragloom.keywords.rake_extract_keywords`), no model.

Chinese works: text is segmented by rjieba, not split by an ASCII regex (see :mod:`ragloom.keywords`).

Keywords come from a node's **text only** (``MetadataMode.NONE``), for all three kinds.  Deliberately
unlike LlamaIndex, which extracts them from the LLM view (text plus metadata such as ``file_path``), so
that every chunk of a file got the path's words (``file``, ``path``, ``data`` …) as keywords and a query
mentioning any of them matched every chunk.

Incremental at node level: when a changed document is rebuilt, its chunks whose content (node hash:
text and content metadata) this index already holds for that document keep the keywords recorded for
them, so only new or edited chunks are sent to the extractor (one LLM call each for
:class:`KeywordTableIndex`).  Each node's postings carry a stamp of the extraction configuration
(:meth:`BaseKeywordTableIndex._index_config`), so keywords extracted under another prompt,
``max_keywords_per_chunk`` or keys version are never reused.

Storage: the postings (key, node id) live in the index store's ``index_postings`` table, not in the
struct's JSON (LlamaIndex rewrites the whole table, O(index), on every insert); a query reads only
the postings of its keys.  ``index.index_struct.table`` reads them all into a copy.

Matching: node and query keywords are expanded with their words and sub-words
(:func:`ragloom.keywords.expand_with_subtokens`) and compared by :func:`ragloom.keywords.keyword_key`
(English words stemmed), so "indexes" matches "indexing" and 北京 matches 北京大学.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional, Sequence

import msgspec

from ragloom.data_structs import KeywordTable
from ragloom.indices.base import BaseIndex
from ragloom.schema import BaseNode, MetadataMode

__all__ = [
    "BaseKeywordTableIndex",
    "KeywordTableIndex",
    "GPTKeywordTableIndex",
    "KeywordTableRetrieverMode",
    "DEFAULT_MAX_KEYWORDS_PER_CHUNK",
]

DEFAULT_MAX_KEYWORDS_PER_CHUNK = 10
#: version of ragloom's keyword matching (part of every source fingerprint: bump it when the keys
#: made of the same text change, so indexes rebuild on their next refresh)
#: 2: katakana / hangul words kept, contraction stems dropped; 3: keywords of the text only, not the metadata
KEYWORD_KEYS_VERSION = 3
#: prefix of the posting key that stamps a node with the configuration its keywords were extracted
#: under (no keyword key starts with a NUL; never shown in ``table`` nor matched by :meth:`lookup`)
_STAMP_PREFIX = "\x00config:"


class KeywordTableRetrieverMode(str, Enum):
    """How a query's keywords are found (LlamaIndex's names): ``default`` asks the LLM, ``simple``
    takes the frequent words, ``rake`` the RAKE phrases."""

    DEFAULT = "default"
    SIMPLE = "simple"
    RAKE = "rake"


class BaseKeywordTableIndex(BaseIndex[KeywordTable]):
    """Base of the keyword table indexes: subclasses implement :meth:`_extract_keywords`.

    Args:
        keyword_extract_template: the LLM prompt (:class:`KeywordTableIndex` only; variables ``text``
            and ``max_keywords``); default: the one a reopened index recorded, else
            :data:`~ragloom.prompts.index_prompts.DEFAULT_KEYWORD_EXTRACT_TEMPLATE`.
        max_keywords_per_chunk: keywords asked per node (>= 1); default: recorded, else 10.
        use_async: accepted for LlamaIndex compatibility; extraction runs one node after another.
        **kwargs: see :class:`~ragloom.indices.base.BaseIndex` (``nodes``, ``storage_context``,
            ``llm``, ``transformations`` …).

    Raises:
        ValueError: ``max_keywords_per_chunk`` < 1, a template without ``text`` / ``max_keywords``, or
            an unknown argument.
    """

    index_struct_cls: ClassVar[Any] = KeywordTable
    #: the ``extractor`` recorded in the struct (tells ``load_index_from_storage`` which class to reopen)
    extractor: ClassVar[str] = "llm"
    #: the retriever mode ``as_retriever()`` uses when none is given
    default_retriever_mode: ClassVar[str] = KeywordTableRetrieverMode.DEFAULT.value
    retriever_accepts_llm: ClassVar[bool] = True

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        objects: Optional[Sequence[Any]] = None,
        index_struct: Optional[KeywordTable] = None,
        llm: Any = None,
        keyword_extract_template: Any = None,
        max_keywords_per_chunk: Optional[int] = None,
        use_async: bool = False,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> None:
        from ragloom.prompts.base import check_vars, to_prompt
        from ragloom.prompts.index_prompts import DEFAULT_KEYWORD_EXTRACT_TEMPLATE

        recorded = index_struct if isinstance(index_struct, KeywordTable) else None
        if max_keywords_per_chunk is None:
            max_keywords_per_chunk = recorded.max_keywords_per_chunk if recorded else DEFAULT_MAX_KEYWORDS_PER_CHUNK
        if not isinstance(max_keywords_per_chunk, int) or isinstance(max_keywords_per_chunk, bool) \
                or max_keywords_per_chunk < 1:
            raise ValueError(f"max_keywords_per_chunk must be an int >= 1, got {max_keywords_per_chunk!r}")
        if keyword_extract_template is None and recorded is not None and recorded.keyword_extract_template:
            keyword_extract_template = recorded.keyword_extract_template
        template = DEFAULT_KEYWORD_EXTRACT_TEMPLATE if keyword_extract_template is None else to_prompt(
            keyword_extract_template, "keyword_extract_template")
        check_vars(template, ["text", "max_keywords"], "keyword_extract_template")
        self.max_keywords_per_chunk = max_keywords_per_chunk
        self.keyword_extract_template = template
        self._custom_template = keyword_extract_template is not None
        self._use_async = use_async
        super().__init__(nodes=nodes, objects=objects, index_struct=index_struct, llm=llm,
                         show_progress=show_progress, **kwargs)
        self._record_config()

    def _build_index_struct(self) -> KeywordTable:
        return KeywordTable(extractor=self.extractor, max_keywords_per_chunk=self.max_keywords_per_chunk,
                            keyword_extract_template=self._template_record())

    def _template_record(self) -> Optional[str]:
        return self.keyword_extract_template.get_template() if self._custom_template else None

    def _record_config(self) -> None:
        """Keep the struct's record of the extraction settings in step with this object's."""
        struct = self._index_struct
        wanted = (self.extractor, self.max_keywords_per_chunk, self._template_record())
        if (struct.extractor, struct.max_keywords_per_chunk, struct.keyword_extract_template) != wanted:
            struct.extractor, struct.max_keywords_per_chunk, struct.keyword_extract_template = wanted
            self._save_index_struct()

    # -- building -------------------------------------------------------------------------------
    def _extract_keywords(self, text: str) -> List[str]:
        """The keywords of one node's text (subclasses)."""
        raise NotImplementedError

    def _index_config(self) -> Dict[str, Any]:
        return {"extractor": self.extractor, "max_keywords_per_chunk": self.max_keywords_per_chunk,
                "keys_version": KEYWORD_KEYS_VERSION}

    def _stamp(self) -> str:
        """The posting key recording the extraction configuration (sha256 of :meth:`_index_config`)."""
        config = json.dumps(self._index_config(), sort_keys=True).encode("utf-8")
        return _STAMP_PREFIX + hashlib.sha256(config).hexdigest()[:32]

    def _recorded_keys(self, nodes: Sequence[BaseNode]) -> Dict[str, List[str]]:
        """``{node id: keys}`` for the ``nodes`` whose text this index already extracted under this
        configuration: a node of the same source document (or the node itself) that it holds with the
        same node hash (text and content metadata; ids also depend on the chunk's offsets, so an edit
        early in a document changes the ids of the unchanged chunks after it) and whose postings carry
        :meth:`_stamp`.  What a rebuilt document's unchanged chunks keep."""
        from ragloom.ingestion.engine import source_id

        held = list(dict.fromkeys([*(nid for ref in dict.fromkeys(source_id(n) for n in nodes)
                                     for nid in self._node_ids(ref)), *(n.node_id for n in nodes)]))
        recorded = self._storage_context.index_store.get_node_postings(self.index_id, held)
        stamp = self._stamp()
        by_hash: Dict[str, List[str]] = {}
        for node_id, keys in recorded.items():
            node_hash = self.docstore.get_document_hash(node_id) if stamp in keys else None
            if node_hash is not None:
                by_hash.setdefault(node_hash, [k for k in keys if not k.startswith(_STAMP_PREFIX)])
        return {n.node_id: by_hash[n.hash] for n in nodes if n.hash in by_hash}

    def _prepare_nodes(self, nodes: List[BaseNode]) -> Dict[str, Any]:
        """The matching keys of each node: recorded ones for unchanged nodes (:meth:`_recorded_keys`),
        else extracted from the node's text without metadata (``MetadataMode.NONE``, see the module
        docstring), expanded with sub-words and turned into keys."""
        from ragloom.keywords import expand_with_subtokens, keyword_key

        out: Dict[str, Any] = self._recorded_keys(nodes)
        for node in nodes:
            if node.node_id in out:
                continue
            keywords = self._extract_keywords(node.get_content(metadata_mode=MetadataMode.NONE))
            keys = {keyword_key(k) for k in expand_with_subtokens(keywords)}
            out[node.node_id] = sorted(k for k in keys if k)
        return out

    def _add_nodes_to_index(self, nodes: Sequence[BaseNode], prepared: Dict[str, Any]) -> None:
        stamp = self._stamp()
        postings = [(key, node.node_id) for node in nodes if node.node_id in prepared
                    for key in [*prepared[node.node_id], stamp]]
        self._storage_context.index_store.add_postings(self.index_id, postings)

    def _materialize_struct(self) -> KeywordTable:
        table = self._storage_context.index_store.get_all_postings(self.index_id)
        table = {k: ids for k, ids in table.items() if not k.startswith(_STAMP_PREFIX)}
        return msgspec.structs.replace(self._index_struct, table=table)

    # -- reading --------------------------------------------------------------------------------
    def lookup(self, keys: Sequence[str]) -> Dict[str, List[str]]:
        """``{key: node ids}`` for the matching keys (:func:`ragloom.keywords.keyword_key`) this index has."""
        return self._storage_context.index_store.get_postings(
            self.index_id, [k for k in keys if not k.startswith(_STAMP_PREFIX)])

    def as_retriever(self, retriever_mode: Any = None, **kwargs: Any) -> Any:
        """A keyword retriever: ``retriever_mode`` ``"default"`` (:class:`KeywordTableGPTRetriever`, the
        LLM finds the query's keywords), ``"simple"`` (:class:`KeywordTableSimpleRetriever`) or
        ``"rake"`` (:class:`KeywordTableRAKERetriever`); default: the index's own way
        (:attr:`default_retriever_mode`: LlamaIndex always defaults to the LLM, so a
        ``SimpleKeywordTableIndex`` there needs an LLM to be queried).  ``kwargs``:
        ``max_keywords_per_query``, ``num_chunks_per_query``, ``query_keyword_extract_template``, ``llm``.

        Raises:
            ValueError: unknown ``retriever_mode`` (lists the allowed ones) or bad retriever arguments.
        """
        from ragloom.indices.keyword_table.retrievers import (
            KeywordTableGPTRetriever,
            KeywordTableRAKERetriever,
            KeywordTableSimpleRetriever,
        )

        try:
            mode = KeywordTableRetrieverMode(retriever_mode or self.default_retriever_mode)
        except ValueError:
            allowed = ", ".join(m.value for m in KeywordTableRetrieverMode)
            raise ValueError(f"retriever_mode must be one of {allowed}, got {retriever_mode!r}") from None
        if mode == KeywordTableRetrieverMode.DEFAULT:
            return KeywordTableGPTRetriever(self, **kwargs)
        kwargs.pop("llm", None)  # passed on by as_query_engine(llm=...); these modes use none
        if mode == KeywordTableRetrieverMode.SIMPLE:
            return KeywordTableSimpleRetriever(self, **kwargs)
        return KeywordTableRAKERetriever(self, **kwargs)


class KeywordTableIndex(BaseKeywordTableIndex):
    """A keyword table whose node keywords an LLM extracts (``keyword_extract_template``, at most
    ``max_keywords_per_chunk`` per node; one LLM call per node, outside any database transaction).

    Rebuilding is incremental: an unchanged document costs no LLM call on refresh, a changed one one
    call per new or edited chunk (its unchanged chunks keep their keywords); changing the
    template or ``max_keywords_per_chunk`` rebuilds every document on the next refresh (the LLM
    itself is not part of the fingerprint: switching models keeps the keywords already extracted).

    Raises:
        IndexNotReadyError: (from the writing methods) there are nodes to build and no LLM is
            configured; nothing is written (a refresh of unchanged documents needs no LLM).
    """

    extractor: ClassVar[str] = "llm"

    def _index_config(self) -> Dict[str, Any]:
        return {**super()._index_config(), "keyword_extract_template": self.keyword_extract_template.get_template()}

    def _check_build_ready(self) -> None:
        self.llm  # noqa: B018  (ValueError when no LLM is configured)

    def _extract_keywords(self, text: str) -> List[str]:
        from ragloom.keywords import extract_keywords_given_response

        response = self.llm.predict(self.keyword_extract_template, text=text,
                                    max_keywords=self.max_keywords_per_chunk)
        return extract_keywords_given_response(response, start_token="KEYWORDS:")


#: LlamaIndex's older name.
GPTKeywordTableIndex = KeywordTableIndex
