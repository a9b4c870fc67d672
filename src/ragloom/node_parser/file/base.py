"""Shared machinery of the format-aware node parsers (Markdown, HTML, JSON, code).

A format parser turns a document into :class:`Piece` s: the node text, its
``[start, end)`` character offsets into ``document.text`` and the metadata the format
adds (``header_path``, ``tag``, ``start_line`` …).  Pieces over the token budget are
cut by the span engine (:func:`~ragloom.node_parser.text.engine.pack_spans`) *before*
they become pieces, measured on the text plus the metadata that is embedded with it, so
no node is over budget.  :class:`FormatNodeParser` builds the nodes (deterministic ids,
SOURCE/PREVIOUS/NEXT relationships) and falls back to sentence splitting, with a logged
reason, when the format cannot be parsed (:class:`FormatError`); any other error is a bug
or a real problem (metadata too long for ``chunk_size`` …) and propagates.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragloom.node_parser.interface import (
    ChunkConfigMixin,
    IdFuncCallable,
    NodeParser,
    _wrappers_for,
    check_metadata_overhead,
    naming_document,
    validate_chunk_args,
)
from ragloom.node_parser.nodes import Piece, build_nodes, piece_metadata
from ragloom.schema import (
    DEFAULT_TEXT_NODE_TMPL,
    BaseNode,
    MetadataMode,
    TextNode,
)

logger = logging.getLogger(__name__)

__all__ = ["Piece", "FormatNodeParser", "FormatError", "sentence_levels"]

Span = Tuple[int, int]
DEFAULT_CHUNK_SIZE = 1024


class FormatError(ValueError):
    """The input is not in the parser's format (the parser falls back to sentence splitting)."""


_LEVELS_CACHE: Dict[str, list] = {}


def sentence_levels(paragraph_separator: str = "\n\n") -> list:
    """The SentenceSplitter's default boundary levels (paragraph > sentence > secondary
    regex > clause > line > word), with ``paragraph_separator`` as the paragraph level."""
    levels = _LEVELS_CACHE.get(paragraph_separator)
    if levels is None:
        from ragloom.node_parser.text.boundaries import (
            CJK_CLAUSE_LEVEL,
            RegexLevel,
            SentenceLevel,
            SeparatorLevel,
        )
        from ragloom.node_parser.text.sentence import CHUNKING_REGEX

        levels = [SeparatorLevel(paragraph_separator, "paragraph")] if paragraph_separator else []
        levels += [
            SentenceLevel(),
            RegexLevel(CHUNKING_REGEX, "secondary"),
            CJK_CLAUSE_LEVEL,
            SeparatorLevel("\n", "line"),
            SeparatorLevel(" ", "word"),
        ]
        _LEVELS_CACHE[paragraph_separator] = levels
    return list(levels)


class CutLevel:
    """A boundary level from precomputed cut positions (structure from a parser)."""

    windowed = False
    margin = 0
    block = ""

    def __init__(self, cuts: Sequence[int], name: str = "structure") -> None:
        self.cuts = sorted(set(cuts))
        self.name = name

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        import bisect

        i = bisect.bisect_right(self.cuts, lo)
        j = bisect.bisect_left(self.cuts, hi)
        return self.cuts[i:j]


class FormatNodeParser(ChunkConfigMixin, NodeParser):
    """Base of the format-aware parsers: pieces → nodes, with a sentence-splitting fallback."""

    _chunk_size_optional = True  # chunk_size=None: no token budget

    def __init__(
        self,
        chunk_size: Optional[int] = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = 0,
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
    ) -> None:
        validate_chunk_args(chunk_size, chunk_overlap, size_optional=True)
        self.chunk_size = None if chunk_size is None else int(chunk_size)
        self.chunk_overlap = int(chunk_overlap)
        self._tokenizer_arg = tokenizer
        self._tokenizer: Any = None
        self.include_metadata = include_metadata
        self.include_prev_next_rel = include_prev_next_rel
        self.id_func = id_func
        self._config_digest: Optional[str] = None
        self._fallback: Any = None

    # -- tokenizer (resolved lazily: Settings.tokenizer may load a model) ----------------
    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            if self._tokenizer_arg is None:
                from ragloom.settings import Settings

                self._tokenizer = Settings.tokenizer
            else:
                from ragloom.tokenizers import get_tokenizer

                self._tokenizer = get_tokenizer(self._tokenizer_arg)
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, value: Any) -> None:
        """Measure budgets in ``value`` from now on (resolved on first use, as in ``__init__``)."""
        self._tokenizer_arg = value
        self._tokenizer = None
        self._fallback = None

    def _config_changed(self, name: str) -> None:
        self._fallback = None  # built from this parser's configuration

    # -- subclass hooks ------------------------------------------------------------------
    @abstractmethod
    def _pieces(self, doc: BaseNode, text: str) -> List[Piece]:
        """The pieces of ``text`` (``doc``'s content); raise :class:`FormatError` to fall back
        to sentence splitting (any other exception propagates to the caller)."""

    def _config_extra(self) -> Dict[str, Any]:
        return {}

    # -- config --------------------------------------------------------------------------
    @classmethod
    def from_defaults(cls, **kwargs: Any) -> "FormatNodeParser":
        return cls(**kwargs)

    def _tokenizer_config(self) -> Any:
        if self._tokenizer_arg is None and self.chunk_size is None:
            return None  # no token budget: the tokenizer plays no part (and is not loaded)
        return super()._tokenizer_config()

    # -- budget helpers ------------------------------------------------------------------
    def _probe(
        self, doc: BaseNode, meta: Dict[str, Any], hidden_embed: Sequence[str] = (), hidden_llm: Sequence[str] = ()
    ) -> TextNode:
        """An empty node with the metadata a chunk adding ``meta`` gets (to measure its wrappers)."""
        base, ex_e, ex_l = piece_metadata(doc, self.include_metadata, meta, hidden_embed, hidden_llm)
        return TextNode(
            text="",
            metadata=base,
            excluded_embed_metadata_keys=ex_e,
            excluded_llm_metadata_keys=ex_l,
            metadata_template=doc.metadata_template,
            metadata_separator=doc.metadata_separator,
            text_template=getattr(doc, "text_template", DEFAULT_TEXT_NODE_TMPL),
        )

    def _wrappers(
        self, doc: BaseNode, meta: Dict[str, Any], hidden_embed: Sequence[str] = (), hidden_llm: Sequence[str] = ()
    ) -> List[Tuple[str, str]]:
        """Distinct ``(prefix, suffix)`` pairs around a chunk in the EMBED and LLM views."""
        probe = self._probe(doc, meta, hidden_embed, hidden_llm)
        return check_metadata_overhead(self.tokenizer, self.chunk_size, _wrappers_for(probe), probe, doc.id_)

    def _pack(self, text: str, levels: Sequence[Any], wrappers: Sequence[Tuple[str, str]]) -> List[Span]:
        """Token-budgeted, whitespace-stripped spans of ``text`` (the span engine)."""
        from ragloom.node_parser.text.engine import (
            ExactCounter,
            make_sizers,
            pack_spans,
        )

        if not text or text.isspace():
            return []
        assert self.chunk_size is not None
        sizer = make_sizers(self.tokenizer, [text])[0]
        return pack_spans(
            text,
            list(levels),
            sizer,
            ExactCounter(self.tokenizer, sizer),
            self.chunk_size,
            min(self.chunk_overlap, self.chunk_size - 1),
            wrappers or [("", "")],
        )

    # -- fallback ------------------------------------------------------------------------
    def _sentence_fallback(self) -> Any:
        if self._fallback is None:
            from ragloom.node_parser.text.sentence import SentenceSplitter

            size = self.chunk_size or DEFAULT_CHUNK_SIZE
            self._fallback = SentenceSplitter(
                chunk_size=size,
                chunk_overlap=min(self.chunk_overlap, size // 5),
                tokenizer=self.tokenizer,
                include_metadata=self.include_metadata,
                include_prev_next_rel=self.include_prev_next_rel,
                id_func=self.id_func,
            )
        return self._fallback

    # -- nodes ---------------------------------------------------------------------------
    def _build(self, doc: BaseNode, pieces: Sequence[Piece]) -> List[BaseNode]:
        """Nodes of ``pieces``: the one node builder, with each piece's metadata; PREVIOUS/NEXT
        links carry the neighbour's metadata (its ``header_path`` …), as ``as_related_node_info()``."""
        return list(
            build_nodes(
                self,
                doc,
                [(p.start, p.end) for p in pieces],
                [p.text for p in pieces],
                [(p.metadata, p.hidden_embed, p.hidden_llm) for p in pieces],
                link_metadata=True,
            )
        )

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        """The nodes of every document; one that is not in the format (:class:`FormatError`) is
        sentence-split instead, with a logged warning.

        Raises:
            DocumentError: (a ``ValueError``) a document's embedded metadata leave no room within
                ``chunk_size``; names the document.
        """
        result: List[BaseNode] = []
        docs = list(documents)
        if show_progress:
            from tqdm.auto import tqdm

            docs = tqdm(docs, desc="Parsing nodes")
        for doc in docs:
            text = doc.get_content(MetadataMode.NONE)
            if not text or text.isspace():
                continue
            with naming_document(doc):  # no room for text next to the metadata: names the document
                try:
                    pieces = self._pieces(doc, text)
                except FormatError as exc:  # not in this format: sentence splitting, with the reason logged
                    logger.warning(
                        "%s: cannot parse document %r (%s: %s); falling back to sentence splitting",
                        self.class_name(), doc.id_, type(exc).__name__, exc,
                    )
                    result.extend(self._sentence_fallback().get_nodes_from_documents([doc]))
                    continue
                result.extend(self._build(doc, pieces))
        return result

    def split_text(self, text: str) -> List[str]:
        """Chunk texts of a bare string (no metadata)."""
        from ragloom.schema import Document

        return [
            n.get_content(MetadataMode.NONE) for n in self.get_nodes_from_documents([Document(text=text, id_="text")])
        ]
