"""``SentenceWindowNodeParser``: one node per sentence, with the surrounding sentences
(the *window*) stored in metadata for the LLM to see at query time.

Retrieval embeds single sentences (precise matches); :class:`~ragloom.postprocessor.MetadataReplacementPostProcessor`
then swaps each retrieved sentence for its window (more context for the answer).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragloom.node_parser.interface import (
    IdFuncCallable,
    MetadataAwareTextSplitter,
    _wrappers_for,
    naming_document,
)
from ragloom.node_parser.text.utils import (
    fit_spans,
    lower_levels,
    segments,
    sentence_cuts,
)
from ragloom.schema import BaseNode, MetadataMode

__all__ = ["SentenceWindowNodeParser", "DEFAULT_WINDOW_METADATA_KEY", "DEFAULT_OG_TEXT_METADATA_KEY"]

DEFAULT_WINDOW_SIZE = 3
DEFAULT_WINDOW_METADATA_KEY = "window"
DEFAULT_OG_TEXT_METADATA_KEY = "original_text"

Span = Tuple[int, int]


class SentenceWindowNodeParser(MetadataAwareTextSplitter):
    """Split each document into one node per sentence; each node's metadata holds its window.

    Sentences follow ``SentenceSplitter``'s rules (Chinese terminators ``。！？；…`` with
    closing quotes kept, sentencex for English, and a blank line always ends a
    sentence), or ``sentence_splitter`` — any ``Callable[[str], list[str]]`` such as
    ``split_by_sentence_tokenizer()`` or NLTK's ``sent_tokenize``; its pieces are located
    in the text in order with a cursor (text between pieces is kept with a neighbour, so
    nothing is lost).

    For node *i*, ``metadata[window_metadata_key]`` is the original text from the start of
    sentence ``i - window_size`` to the end of sentence ``i + window_size`` (clipped at
    the document edges; exact characters, so Chinese is not re-joined with spaces) and
    ``metadata[original_text_metadata_key]`` is the sentence.  Both keys are added to
    ``excluded_embed_metadata_keys`` and ``excluded_llm_metadata_keys``: the embed model
    and the LLM see the sentence only, until the postprocessor swaps the window in.

    Budget (ragloom addition): a sentence whose embedded content (sentence plus the
    embed-visible document metadata) exceeds ``chunk_size`` tokens of ``tokenizer`` is
    split further by the span engine — between phrases (``，、；：,;:``), then lines,
    words, tokens — so no node is silently truncated by the embed model.  Each piece is
    then a "sentence" of its own (its own node and window centre).

    ``node.start_char_idx``/``end_char_idx`` are exact character offsets of each sentence
    (whitespace-stripped) in the document.

    Args:
        sentence_splitter: ``Callable[[str], list[str]]``; ``None`` for ragloom's rules.
        window_size: sentences on each side of the centre sentence (≥ 0).
        window_metadata_key / original_text_metadata_key: metadata keys (non-empty, distinct).
        chunk_size: token budget per node; ``None`` → ``Settings.chunk_size``
            (``min(1024, embed model's text limit)``).
        tokenizer: what ``chunk_size`` is measured in; ``None`` → ``Settings.tokenizer``
            (the embed model's tokenizer).

    Raises:
        ValueError: ``window_size`` < 0 or not an int, empty/equal metadata keys,
            ``chunk_size`` ≤ 0, or document metadata too large for ``chunk_size``.
    """

    def __init__(
        self,
        sentence_splitter: Optional[Callable[[str], List[str]]] = None,
        window_size: int = DEFAULT_WINDOW_SIZE,
        window_metadata_key: str = DEFAULT_WINDOW_METADATA_KEY,
        original_text_metadata_key: str = DEFAULT_OG_TEXT_METADATA_KEY,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: Any = None,
        id_func: Optional[IdFuncCallable] = None,
        chunk_size: Optional[int] = None,
        tokenizer: Any = None,
    ) -> None:
        if not isinstance(window_size, int) or isinstance(window_size, bool) or window_size < 0:
            raise ValueError(f"window_size must be an int >= 0, got {window_size!r}")
        if not window_metadata_key or not original_text_metadata_key:
            raise ValueError("window_metadata_key and original_text_metadata_key must be non-empty strings")
        if window_metadata_key == original_text_metadata_key:
            raise ValueError(f"window_metadata_key and original_text_metadata_key are both {window_metadata_key!r}")
        if sentence_splitter is not None and not callable(sentence_splitter):
            raise ValueError(f"sentence_splitter must be callable, got {type(sentence_splitter).__name__}")
        if chunk_size is None:
            from ragloom.settings import Settings

            chunk_size = Settings.chunk_size
        super().__init__(chunk_size, 0, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self.sentence_splitter = sentence_splitter
        self.window_size = window_size
        self.window_metadata_key = window_metadata_key
        self.original_text_metadata_key = original_text_metadata_key

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        sentence_splitter: Optional[Callable[[str], List[str]]] = None,
        window_size: int = DEFAULT_WINDOW_SIZE,
        window_metadata_key: str = DEFAULT_WINDOW_METADATA_KEY,
        original_text_metadata_key: str = DEFAULT_OG_TEXT_METADATA_KEY,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: Any = None,
        id_func: Optional[IdFuncCallable] = None,
        chunk_size: Optional[int] = None,
        tokenizer: Any = None,
    ) -> "SentenceWindowNodeParser":
        return cls(
            sentence_splitter=sentence_splitter,
            window_size=window_size,
            window_metadata_key=window_metadata_key,
            original_text_metadata_key=original_text_metadata_key,
            include_metadata=include_metadata,
            include_prev_next_rel=include_prev_next_rel,
            callback_manager=callback_manager,
            id_func=id_func,
            chunk_size=chunk_size,
            tokenizer=tokenizer,
        )

    # -- span-engine hooks -------------------------------------------------------------
    def _levels(self) -> list:
        return lower_levels()

    def _config_extra(self) -> Dict[str, Any]:
        fn = self.sentence_splitter
        return {
            "window_size": self.window_size,
            "window_metadata_key": self.window_metadata_key,
            "original_text_metadata_key": self.original_text_metadata_key,
            "sentence_splitter": None
            if fn is None
            else f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}",
        }

    # -- spans ---------------------------------------------------------------------------
    def _sentence_spans(self, text: str, wrappers: Sequence[Tuple[str, str]]) -> List[Span]:
        if not text or text.isspace():
            return []
        spans = segments(text, sentence_cuts(text, self.sentence_splitter))
        return fit_spans(text, spans, self.tokenizer, self.chunk_size, wrappers)

    def split_spans(self, text: str, metadata_str: Optional[str] = None) -> List[Span]:
        """``(start, end)`` spans of the sentences of ``text`` (whitespace-stripped, each
        within ``chunk_size`` tokens, with ``metadata_str + "\\n\\n"`` when given)."""
        wrappers: List[Tuple[str, str, MetadataMode]] = [("", "", MetadataMode.NONE)]
        if metadata_str is not None and metadata_str.strip():
            wrappers = [(metadata_str.strip() + "\n\n", "", MetadataMode.EMBED)]
        return self._sentence_spans(text, self._check_overhead(wrappers, None))

    # -- nodes ---------------------------------------------------------------------------
    def build_window_nodes_from_documents(self, documents: Sequence[BaseNode]) -> List[BaseNode]:
        """Same as :meth:`get_nodes_from_documents` (LlamaIndex's name)."""
        return self.get_nodes_from_documents(documents)

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        """One node per sentence of every document, in document order (see the class docstring).

        Raises:
            DocumentError: (a ``ValueError``) a document's embedded metadata leave no room for its
                text within ``chunk_size``; names the document.
        """
        out: List[BaseNode] = []
        wkey, okey, w = self.window_metadata_key, self.original_text_metadata_key, self.window_size
        for doc in documents:
            text = doc.get_content(MetadataMode.NONE)
            if not text or text.isspace():
                continue
            if self.include_metadata:
                wrappers = _wrappers_for(doc)
            else:
                wrappers = [("", "", MetadataMode.NONE)]
            with naming_document(doc):
                spans = self._sentence_spans(text, self._check_overhead(wrappers, doc))
            nodes = self._build_nodes(doc, text, spans)
            last = len(spans) - 1
            for i, node in enumerate(nodes):
                a = spans[max(0, i - w)][0]
                b = spans[min(last, i + w)][1]
                node.metadata[wkey] = text[a:b]
                node.metadata[okey] = node.text
                for keys in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
                    for k in (wkey, okey):
                        if k not in keys:
                            keys.append(k)
            out.extend(nodes)
        return out
