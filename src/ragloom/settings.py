"""Process-wide defaults, as LlamaIndex's ``Settings``.

Every attribute is created lazily on first use, so ``import ragloom`` stays cheap
(torch is imported only when an embedding is first computed).

- ``Settings.embed_model``: default :class:`~ragloom.embeddings.HuggingFaceEmbedding`
  (the bundled all-MiniLM-L6-v2, offline).
- ``Settings.tokenizer``: the tokenizer chunk budgets are measured in; by default the
  embed model's own tokenizer, so a chunk fits the model that consumes it.
- ``Settings.chunk_size`` / ``Settings.chunk_overlap`` (tokens): defaults for the default
  node parser; ``chunk_size`` defaults to ``min(1024, embed model's text token limit)``.
- ``Settings.node_parser``: default :class:`~ragloom.node_parser.SentenceSplitter`.
- ``Settings.transformations``: default ``[Settings.node_parser]``.
- ``Settings.llm``: ``None`` unless set (an LLM or a :func:`ragloom.llms.resolve_llm`
  specification such as ``"local"``) or named by ``$RAGLOOM_LLM``.
- ``Settings.callback_manager``: the :class:`~ragloom.callbacks.CallbackManager` components
  without their own report to (an empty one until set); read at call time.
"""

from __future__ import annotations

from typing import Any, List, Optional


#: The largest default chunk (tokens): LlamaIndex's default ``chunk_size``.  A model whose input
#: limit is smaller gets chunks of its limit instead, so nothing is silently truncated.
DEFAULT_CHUNK_SIZE_CAP = 1024
#: Default overlap as a share of ``chunk_size`` (ragloom's choice: 1/8, so neighbouring chunks share
#: about one sentence at the default sizes; LlamaIndex uses a fixed 200 tokens, which fails for
#: ``chunk_size <= 200``).
DEFAULT_OVERLAP_DIVISOR = 8


def default_chunk_size(max_text_tokens: Optional[int]) -> int:
    """The default ``chunk_size`` (tokens) for an embed model taking ``max_text_tokens`` text tokens
    (``None``: unlimited): ``min(DEFAULT_CHUNK_SIZE_CAP, max_text_tokens)``.  The one place every
    entry point (``Settings``, the splitters, ``VectorStoreIndex``, ``ragloom index``) gets it from."""
    if max_text_tokens is None:
        return DEFAULT_CHUNK_SIZE_CAP
    return min(DEFAULT_CHUNK_SIZE_CAP, int(max_text_tokens))


def default_chunk_overlap(chunk_size: int) -> int:
    """The default ``chunk_overlap`` (tokens) for ``chunk_size``: ``chunk_size // DEFAULT_OVERLAP_DIVISOR``."""
    return max(0, int(chunk_size) // DEFAULT_OVERLAP_DIVISOR)


def resolve_chunk_args(chunk_size: Optional[int], chunk_overlap: Optional[int]) -> "tuple[int, int]":
    """``(chunk_size, chunk_overlap)`` with ``None`` replaced by the defaults: ``chunk_size`` from
    :attr:`Settings.chunk_size` (the embed model's limit, capped); ``chunk_overlap`` from
    :attr:`Settings.chunk_overlap` when both are defaulted, else :func:`default_chunk_overlap`."""
    # given values are passed on as they are: the splitter validates them (a str or float is refused)
    if chunk_size is None:
        return Settings.chunk_size, Settings.chunk_overlap if chunk_overlap is None else chunk_overlap
    if chunk_overlap is None:
        valid = isinstance(chunk_size, int) and not isinstance(chunk_size, bool) and chunk_size > 0
        return chunk_size, default_chunk_overlap(chunk_size) if valid else 0
    return chunk_size, chunk_overlap


#: ``parser`` values of :func:`default_node_parser`, with what each does.
PARSER_DESCRIPTIONS = {
    "sentence": "SentenceSplitter: sentences packed to chunk_size tokens, chunk_overlap tokens shared",
    "auto": "by file type: Markdown by sections, code by syntax (tree-sitter), other text by sentences",
    "markdown": "Markdown files by sections (header path kept), other files by sentences",
    "code": "code files by syntax (tree-sitter), other files by sentences",
    "token": "TokenTextSplitter: windows of chunk_size tokens cut at spaces, chunk_overlap tokens shared",
}
PARSERS = tuple(PARSER_DESCRIPTIONS)


def default_node_parser(
    embed_model: Any, chunk_size: Optional[int] = None, chunk_overlap: Optional[int] = None, parser: str = "sentence"
) -> Any:
    """The default node parser for ``embed_model``, measured in the model's own tokenizer, with
    ``chunk_size`` defaulting to :func:`default_chunk_size` of its text-token limit and
    ``chunk_overlap`` to :func:`default_chunk_overlap`.  ``VectorStoreIndex`` and ``ragloom index``
    both use it.

    ``parser``: ``"sentence"`` — a :class:`~ragloom.node_parser.SentenceSplitter` for every
    document; ``"auto"`` — a :class:`~ragloom.node_parser.SimpleFileNodeParser` routing by file
    type: Markdown and code to their parsers, sentence splitting for the rest (HTML and JSON files
    arrive as plain text from ``SimpleDirectoryReader``); ``"markdown"`` or ``"code"`` — the same
    router with only that format (the chunk inspector of ``ragloom serve`` compares them);
    ``"token"`` — a :class:`~ragloom.node_parser.TokenTextSplitter`.

    Raises:
        ValueError: ``chunk_size`` above the model's limit (its chunks would be truncated when
            embedded); a bad ``chunk_size`` / ``chunk_overlap`` (see ``validate_chunk_args``);
            ``parser`` not in :data:`PARSERS`.
    """
    from ragloom.node_parser import SentenceSplitter, SimpleFileNodeParser

    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {list(PARSERS)}, got {parser!r}")

    limit = embed_model.max_text_tokens
    if chunk_size is None:
        chunk_size = default_chunk_size(limit)
    elif limit is not None and int(chunk_size) > int(limit):
        raise ValueError(
            f"chunk_size {chunk_size} exceeds the embed model's limit of {limit} tokens "
            f"(allowed: at most {limit}); larger chunks would be truncated when embedded"
        )
    if chunk_overlap is None:
        chunk_overlap = default_chunk_overlap(chunk_size)
    tokenizer = embed_model.get_tokenizer() or Settings.tokenizer
    sentence = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=tokenizer)
    if parser == "sentence":
        return sentence
    if parser == "token":
        from ragloom.node_parser import TokenTextSplitter

        return TokenTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=tokenizer)
    # SimpleDirectoryReader already turns HTML and JSON files into plain text (their structure is
    # gone), so only Markdown and code are routed to their own parsers
    formats = ("code", "markdown") if parser == "auto" else (parser,)
    return SimpleFileNodeParser(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=tokenizer, formats=formats
    )


class _Settings:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every setting (tests use this)."""
        self._embed_model: Any = None
        self._tokenizer: Any = None
        self._node_parser: Any = None
        self._transformations: Optional[List[Any]] = None
        self._chunk_size: Optional[int] = None
        self._chunk_overlap: Optional[int] = None
        self._llm: Any = None
        self._callback_manager: Any = None

    # embed model ---------------------------------------------------------------
    @property
    def embed_model(self) -> Any:
        if self._embed_model is None:
            from ragloom.embeddings import resolve_embed_model

            self._embed_model = resolve_embed_model("default")
        return self._embed_model

    @embed_model.setter
    def embed_model(self, value: Any) -> None:
        from ragloom.embeddings import resolve_embed_model

        self._embed_model = resolve_embed_model(value)
        self._node_parser = None if self._node_parser_is_default else self._node_parser

    # tokenizer -----------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        """The :class:`~ragloom.tokenizers.Tokenizer` budgets are measured in."""
        if self._tokenizer is not None:
            return self._tokenizer
        from ragloom.tokenizers import get_default_tokenizer, get_tokenizer

        if self._embed_model is not None and hasattr(self._embed_model, "get_tokenizer"):
            tok = self._embed_model.get_tokenizer()
            if tok is not None:
                return get_tokenizer(tok)  # a BaseTokenizer as is; anything else adapted
        return get_default_tokenizer()

    @tokenizer.setter
    def tokenizer(self, value: Any) -> None:
        from ragloom.tokenizers import get_tokenizer

        self._tokenizer = None if value is None else get_tokenizer(value)

    # chunking ------------------------------------------------------------------
    @property
    def chunk_size(self) -> int:
        if self._chunk_size is not None:
            return self._chunk_size
        limit = None
        model = self._embed_model
        if model is not None:
            limit = getattr(model, "max_text_tokens", None)
        if limit is None:
            from ragloom.embeddings import DEFAULT_MAX_TEXT_TOKENS

            limit = DEFAULT_MAX_TEXT_TOKENS
        return default_chunk_size(int(limit))

    @chunk_size.setter
    def chunk_size(self, value: Optional[int]) -> None:
        if value is not None and int(value) <= 0:
            raise ValueError(f"chunk_size must be > 0, got {value}")
        self._chunk_size = None if value is None else int(value)
        self._node_parser = None if self._node_parser_is_default else self._node_parser

    @property
    def chunk_overlap(self) -> int:
        if self._chunk_overlap is not None:
            return min(self._chunk_overlap, self.chunk_size - 1)
        return default_chunk_overlap(self.chunk_size)

    @chunk_overlap.setter
    def chunk_overlap(self, value: Optional[int]) -> None:
        if value is not None and int(value) < 0:
            raise ValueError(f"chunk_overlap must be >= 0, got {value}")
        self._chunk_overlap = None if value is None else int(value)
        self._node_parser = None if self._node_parser_is_default else self._node_parser

    # node parser / transformations --------------------------------------------------
    _node_parser_is_default: bool = True

    @property
    def node_parser(self) -> Any:
        if self._node_parser is None:
            from ragloom.node_parser import SentenceSplitter

            self._node_parser = SentenceSplitter(
                chunk_size=self.chunk_size, chunk_overlap=self.chunk_overlap, tokenizer=self.tokenizer
            )
            self._node_parser_is_default = True
        return self._node_parser

    @node_parser.setter
    def node_parser(self, value: Any) -> None:
        self._node_parser = value
        self._node_parser_is_default = value is None

    text_splitter = node_parser

    @property
    def transformations(self) -> List[Any]:
        if self._transformations is None:
            return [self.node_parser]
        return self._transformations

    @transformations.setter
    def transformations(self, value: Optional[List[Any]]) -> None:
        self._transformations = None if value is None else list(value)

    @property
    def llm(self) -> Any:
        """The default LLM; ``None`` until set, unless ``$RAGLOOM_LLM`` holds a specification
        (see :func:`ragloom.llms.resolve_llm`; e.g. ``local``, ``ollama:llama3.2``)."""
        if self._llm is None:
            import os

            spec = os.environ.get("RAGLOOM_LLM")
            if spec:
                from ragloom.llms import resolve_llm

                self._llm = resolve_llm(spec)
        return self._llm

    @llm.setter
    def llm(self, value: Any) -> None:
        """An :class:`~ragloom.llms.LLM`, a specification string for :func:`ragloom.llms.resolve_llm`
        (``"local"`` = the offline toy), or ``None``."""
        if isinstance(value, str):
            from ragloom.llms import resolve_llm

            value = resolve_llm(value)
        self._llm = value

    # callbacks -----------------------------------------------------------------------
    @property
    def callback_manager(self) -> Any:
        """The :class:`~ragloom.callbacks.CallbackManager` every instrumented component without a
        manager of its own reports to (see :mod:`ragloom.callbacks.base`); an empty one, created on
        first use, until set.  Components read it at call time, so setting it after building an
        index or engine takes effect."""
        cm = self._callback_manager
        if cm is None:
            from ragloom.callbacks.base import CallbackManager

            cm = self._callback_manager = CallbackManager()
        return cm

    @callback_manager.setter
    def callback_manager(self, value: Any) -> None:
        """A ``CallbackManager``, or ``None`` (back to an empty one).

        Raises:
            ValueError: anything else.
        """
        from ragloom.callbacks.base import check_callback_manager

        self._callback_manager = check_callback_manager(value, "Settings.callback_manager")


Settings = _Settings()

__all__ = ["Settings"]
