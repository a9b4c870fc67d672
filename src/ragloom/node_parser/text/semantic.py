"""``SemanticSplitterNodeParser``: chunk boundaries where the meaning shifts.

The idea is Greg Kamradt's "semantic chunking" (level 4 of his "5 Levels of Text
Splitting"), as LlamaIndex documents it for its ``SemanticSplitterNodeParser``:

1. split the text into sentences;
2. combine each sentence with ``buffer_size`` sentences on each side (a *group*), so a
   distance reflects the local context rather than one short sentence;
3. embed every group and take the cosine distance ``1 - cos(g_i, g_{i+1})`` between
   consecutive groups;
4. cut after sentence ``i`` wherever that distance is greater than the
   ``breakpoint_percentile_threshold``-th percentile of all the distances.

ragloom's difference: a hard ``max_chunk_size``.  The percentile rule alone can leave a
homogeneous text as one enormous chunk (no distance stands out), which the embed model
then silently truncates.  Here every emitted chunk — text plus the metadata embedded with
it — is at most ``max_chunk_size`` tokens of the embed model's tokenizer; an oversized
semantic group is packed by the span engine at sentence, then phrase, clause, line, word
and token boundaries.
"""

from __future__ import annotations

import bisect
import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ragloom.node_parser.interface import (
    IdFuncCallable,
    MetadataAwareTextSplitter,
    _wrappers_for,
    naming_document,
)
from ragloom.node_parser.text.utils import (
    CutsLevel,
    fit_spans,
    lower_levels,
    segments,
    sentence_cuts,
)
from ragloom.schema import BaseNode, MetadataMode

logger = logging.getLogger(__name__)

__all__ = ["SemanticSplitterNodeParser", "semantic_breakpoints"]

Span = Tuple[int, int]


def semantic_breakpoints(embeddings: np.ndarray, percentile: float) -> List[int]:
    """Indexes ``i`` such that a chunk ends after sentence ``i``.

    ``embeddings`` has shape ``(n, dim)`` (one row per sentence group, in order);
    distances are ``1 - cosine`` between rows ``i`` and ``i + 1`` (a zero vector has
    distance 1 to anything); a break is where the distance is strictly greater than the
    ``percentile``-th percentile (0–100, numpy's linear interpolation) of all ``n - 1``
    distances.  Fewer than two rows give no breaks.
    """
    emb = np.asarray(embeddings, dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] < 2:
        return []
    norms = np.linalg.norm(emb, axis=1)
    safe = np.where(norms == 0, 1.0, norms)
    unit = emb / safe[:, None]
    cos = np.einsum("ij,ij->i", unit[:-1], unit[1:])
    cos = np.where((norms[:-1] == 0) | (norms[1:] == 0), 0.0, cos)
    dist = 1.0 - cos
    threshold = float(np.percentile(dist, percentile))
    return [int(i) for i in np.nonzero(dist > threshold)[0]]


class SemanticSplitterNodeParser(MetadataAwareTextSplitter):
    """Split documents where consecutive sentence groups' embeddings diverge (see module docstring).

    Args:
        embed_model: a :class:`~ragloom.embeddings.BaseEmbedding`; ``None`` → ``Settings.embed_model``.
            All sentence groups of all documents passed in one call are embedded with
            **one** ``get_text_embedding_batch_array`` call (the model batches them);
            identical group texts are embedded once.
        buffer_size: sentences combined on each side of a sentence (≥ 0; LlamaIndex's default 1).
        breakpoint_percentile_threshold: percentile (0–100) of distances above which a
            chunk ends (default 95: about one break per 20 sentences on varied text).
        max_chunk_size: hard limit in **tokens** of ``tokenizer`` on each chunk's embedded
            content (text + embed/LLM-visible metadata).  ``None`` → the embed model's
            ``max_text_tokens`` (e.g. 254 for the bundled MiniLM), or ``Settings.chunk_size``
            when the model does not say.
        sentence_splitter: ``Callable[[str], list[str]]``; ``None`` for ragloom's rules
            (Chinese ``。！？；…``, sentencex for English, blank lines).
        tokenizer: ``None`` → the embed model's own tokenizer (``embed_model.get_tokenizer()``),
            else ``Settings.tokenizer``.

    Sentences longer than ``max_chunk_size`` are split (phrases, clauses, words, tokens)
    before grouping.  Node offsets are exact character offsets into the document.

    Raises:
        ValueError: ``buffer_size`` < 0, percentile outside [0, 100], ``max_chunk_size`` ≤ 0,
            an embed model that is not a ``BaseEmbedding``, or metadata that leaves no
            room in ``max_chunk_size``.
    """

    def __init__(
        self,
        embed_model: Any = None,
        buffer_size: int = 1,
        breakpoint_percentile_threshold: float = 95,
        max_chunk_size: Optional[int] = None,
        sentence_splitter: Optional[Callable[[str], List[str]]] = None,
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
        callback_manager: Any = None,
        show_progress: bool = False,
    ) -> None:
        from ragloom.embeddings import BaseEmbedding
        from ragloom.settings import Settings

        if embed_model is None:
            embed_model = Settings.embed_model
        if not isinstance(embed_model, BaseEmbedding):
            raise ValueError(f"embed_model must be a BaseEmbedding, got {type(embed_model).__name__}")
        if not isinstance(buffer_size, int) or isinstance(buffer_size, bool) or buffer_size < 0:
            raise ValueError(f"buffer_size must be an int >= 0, got {buffer_size!r}")
        if not 0 <= float(breakpoint_percentile_threshold) <= 100:
            raise ValueError(
                f"breakpoint_percentile_threshold must be in [0, 100], got {breakpoint_percentile_threshold!r}"
            )
        if sentence_splitter is not None and not callable(sentence_splitter):
            raise ValueError(f"sentence_splitter must be callable, got {type(sentence_splitter).__name__}")
        if tokenizer is None:
            tokenizer = embed_model.get_tokenizer() or Settings.tokenizer
        if max_chunk_size is None:
            limit = embed_model.max_text_tokens
            max_chunk_size = int(limit) if limit is not None else Settings.chunk_size
        super().__init__(max_chunk_size, 0, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self.embed_model = embed_model
        self.buffer_size = buffer_size
        self.breakpoint_percentile_threshold = float(breakpoint_percentile_threshold)
        self.sentence_splitter = sentence_splitter
        self.show_progress = show_progress

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        embed_model: Any = None,
        breakpoint_percentile_threshold: float = 95,
        buffer_size: int = 1,
        sentence_splitter: Optional[Callable[[str], List[str]]] = None,
        original_text_metadata_key: str = "original_text",
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: Any = None,
        id_func: Optional[IdFuncCallable] = None,
        max_chunk_size: Optional[int] = None,
        tokenizer: Any = None,
    ) -> "SemanticSplitterNodeParser":
        """LlamaIndex's ``from_defaults`` (``original_text_metadata_key`` is accepted and unused)."""
        return cls(
            embed_model=embed_model,
            buffer_size=buffer_size,
            breakpoint_percentile_threshold=breakpoint_percentile_threshold,
            max_chunk_size=max_chunk_size,
            sentence_splitter=sentence_splitter,
            tokenizer=tokenizer,
            include_metadata=include_metadata,
            include_prev_next_rel=include_prev_next_rel,
            id_func=id_func,
            callback_manager=callback_manager,
        )

    @property
    def max_chunk_size(self) -> int:
        """The hard token limit per chunk (``chunk_size`` of the underlying engine)."""
        return self.chunk_size

    # -- span-engine hooks -------------------------------------------------------------
    def _levels(self) -> list:
        return lower_levels()

    def _config_extra(self) -> Dict[str, Any]:
        fn = self.sentence_splitter
        return {
            "embed_model": self.embed_model.cache_identity(),
            "buffer_size": self.buffer_size,
            "breakpoint_percentile_threshold": self.breakpoint_percentile_threshold,
            "sentence_splitter": None
            if fn is None
            else f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}",
        }

    # -- spans ---------------------------------------------------------------------------
    def _sentences(self, text: str, wrappers: Sequence[Tuple[str, str]]) -> List[Span]:
        if not text or text.isspace():
            return []
        spans = segments(text, sentence_cuts(text, self.sentence_splitter))
        return fit_spans(text, spans, self.tokenizer, self.chunk_size, wrappers)

    def _groups(self, text: str, sents: List[Span]) -> List[str]:
        b, last = self.buffer_size, len(sents) - 1
        return [text[sents[max(0, i - b)][0] : sents[min(last, i + b)][1]] for i in range(len(sents))]

    def _chunks(self, text: str, sents: List[Span], emb: Optional[np.ndarray], wrappers) -> List[Span]:
        if not sents:
            return []
        breaks = semantic_breakpoints(emb, self.breakpoint_percentile_threshold) if emb is not None else []
        groups: List[Tuple[int, int]] = []  # sentence index ranges [i, j)
        start = 0
        for i in breaks:
            groups.append((start, i + 1))
            start = i + 1
        groups.append((start, len(sents)))
        spans = [(sents[i][0], sents[j - 1][1]) for i, j in groups]

        starts = [s[0] for s in sents]

        def levels_for(a: int, b: int) -> list:
            lo, hi = bisect.bisect_right(starts, a), bisect.bisect_left(starts, b)
            cuts = [p - a for p in starts[lo:hi]]
            return [CutsLevel(cuts, "sentence")] + lower_levels()

        return fit_spans(text, spans, self.tokenizer, self.chunk_size, wrappers, levels_for)

    def split_spans(self, text: str, metadata_str: Optional[str] = None) -> List[Span]:
        """``(start, end)`` spans of the semantic chunks of ``text`` (each within ``max_chunk_size``
        tokens, with ``metadata_str + "\\n\\n"`` when given)."""
        wrappers: List[Tuple[str, str, MetadataMode]] = [("", "", MetadataMode.NONE)]
        if metadata_str is not None and metadata_str.strip():
            wrappers = [(metadata_str.strip() + "\n\n", "", MetadataMode.EMBED)]
        uniq = self._check_overhead(wrappers, None)
        sents = self._sentences(text, uniq)
        emb = self._embed([self._groups(text, sents)])[0]
        return self._chunks(text, sents, emb, uniq)

    def _embed(self, groups_per_doc: List[List[str]], show_progress: bool = False) -> List[Optional[np.ndarray]]:
        flat = [g for groups in groups_per_doc if len(groups) > 1 for g in groups]
        progress = self.show_progress or show_progress
        vecs = None
        if flat:
            # identical groups (repeated boilerplate, homogeneous text) are embedded once
            index: Dict[str, int] = {}
            where = [index.setdefault(g, len(index)) for g in flat]
            unique = list(index)
            uvecs = self.embed_model.get_text_embedding_batch_array(unique, show_progress=progress)
            vecs = uvecs[np.asarray(where, dtype=np.intp)]
        out: List[Optional[np.ndarray]] = []
        pos = 0
        for groups in groups_per_doc:
            if len(groups) > 1:
                assert vecs is not None
                out.append(vecs[pos : pos + len(groups)])
                pos += len(groups)
            else:
                out.append(None)  # 0 or 1 sentence: nothing to compare
        return out

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        """Semantic chunks of every document, in order.  Embeds all sentence groups of all
        ``documents`` in one batched call, then cuts and budgets each document.

        Raises:
            DocumentError: (a ``ValueError``) a document's embedded metadata leave no room for its
                text within ``max_chunk_size``; names the document.
        """
        todo = []
        for doc in documents:
            text = doc.get_content(MetadataMode.NONE)
            if not text or text.isspace():
                continue
            wrappers = _wrappers_for(doc) if self.include_metadata else [("", "", MetadataMode.NONE)]
            uniq = self._check_overhead(wrappers, doc)
            with naming_document(doc):
                sents = self._sentences(text, uniq)
            todo.append((doc, text, uniq, sents))
        embs = self._embed([self._groups(text, sents) for _, text, _, sents in todo], show_progress)
        out: List[BaseNode] = []
        for (doc, text, uniq, sents), emb in zip(todo, embs, strict=True):
            with naming_document(doc):
                spans = self._chunks(text, sents, emb, uniq)
            out.extend(self._build_nodes(doc, text, spans))
        return out
