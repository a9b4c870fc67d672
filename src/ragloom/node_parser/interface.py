"""Base classes of node parsers (LlamaIndex names): ``NodeParser``, ``TextSplitter``,
``MetadataAwareTextSplitter``.

A node parser is a :class:`~ragloom.schema.TransformComponent`: ``parser(nodes)`` returns
the chunk nodes of every input node.  Text splitters built on the span engine share
:class:`MetadataAwareTextSplitter`, which turns spans into nodes (offsets exact by
construction, deterministic ids, SOURCE/PREVIOUS/NEXT relationships).

Callbacks: ``NodeParser.__init_subclass__`` wraps the ``get_nodes_from_documents`` (and
``split_text`` / ``split_text_metadata_aware``) each parser defines, so every parser reports
NODE_PARSING and CHUNKING events to its ``callback_manager`` with no code of its own (see
:class:`NodeParser`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import numbers
import json
import logging
from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ragloom.callbacks.instrument import CallbackManagerMixin, enter_component, instrument_methods, leave_component
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.errors import DocumentError

from ragloom.schema import (
    DEFAULT_TEXT_NODE_TMPL,
    BaseNode,
    MetadataMode,
    NodeRelationship,
    TextNode,
    TransformComponent,
)

if TYPE_CHECKING:
    from ragloom.node_parser.text.engine import CallCounts

logger = logging.getLogger(__name__)

__all__ = ["NodeParser", "TextSplitter", "MetadataAwareTextSplitter", "IdFuncCallable"]

IdFuncCallable = Callable[[int, BaseNode], str]
Span = Tuple[int, int]
_SENTINEL = "\x00ragloom-content\x00"
_BATCH_CHARS = 131_072  # characters per tokenization batch (a tokenizer working in a background thread)
#: characters per tokenization batch of a tokenizer that works in turn with packing (holds the GIL):
#: tokenizing megabytes, then packing them, keeps each one's tables in the CPU cache (alternating
#: every 128 kB cost about a tenth more CPU time than one tokenizer pass); the token starts of a
#: batch take at most 4 bytes per character (one int32 per token)
_SEQUENTIAL_BATCH_CHARS = 1 << 22
_AHEAD = 8  # batches tokenized ahead of packing (bounds memory)


class NodeParser(CallbackManagerMixin, TransformComponent):
    """Turns nodes (usually documents) into chunk nodes.

    Callbacks: each ``get_nodes_from_documents`` call (``parser(nodes)`` included) is one
    ``NODE_PARSING`` event of :attr:`callback_manager` (start ``DOCUMENTS``, end ``NODES``)
    holding one ``CHUNKING`` event per input document (start ``CHUNKS: [document text]``, end
    ``CHUNKS: [its chunks' texts]``).  The CHUNKING events are reported when parsing is done
    (the span engine splits documents in batches, so their start and end times carry no
    per-document duration); a direct ``split_text(text)`` call is one timed CHUNKING event.  A
    parser delegating to another reports each document once.  Subclasses get this by defining
    the methods (``__init_subclass__`` wraps them); without handlers the wrapper is one check.
    ``callback_manager=`` of the parsers' constructors sets the manager.
    """

    include_metadata: bool = True
    include_prev_next_rel: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        instrument_methods(cls, _PARSER_WRAPPERS)

    @abstractmethod
    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]: ...

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        """The chunk nodes of ``nodes``, each keeping the *original* source document (see
        :func:`carry_source`), so parsers chain: ``parser2(parser1(docs))``."""
        with metadata_warnings_once():
            return carry_source(nodes, self.get_nodes_from_documents(nodes, **kwargs))


# -- callbacks -------------------------------------------------------------------------------------
#: ids of the documents a CHUNKING event was already reported for inside the outermost traced
#: ``get_nodes_from_documents`` of this thread/task (``None`` outside one): a parser that delegates
#: to another (SimpleFileNodeParser, HierarchicalNodeParser) reports each document once
_CHUNKED: contextvars.ContextVar[Optional[set]] = contextvars.ContextVar("ragloom_cb_chunked", default=None)


def _report_chunking(cm: Any, documents: Sequence[BaseNode], nodes: Sequence[BaseNode], done: set) -> None:
    """One CHUNKING event per document of ``documents`` not in ``done``: start ``CHUNKS: [its
    text]``, end ``CHUNKS: [the texts of its nodes]`` (the nodes whose SOURCE is the document)."""
    by_source: Dict[str, List[str]] = {}
    for node in nodes:
        src = node.source_node
        if src is not None:
            by_source.setdefault(src.node_id, []).append(node.get_content(MetadataMode.NONE))
    for doc in documents:
        if doc.id_ in done:
            continue
        done.add(doc.id_)
        with cm.event(CBEventType.CHUNKING, payload={EventPayload.CHUNKS: [doc.get_content(MetadataMode.NONE)]}) as ev:
            ev.on_end(payload={EventPayload.CHUNKS: by_source.get(doc.id_, [])})


def _traced_parse(fn: Callable[..., List[BaseNode]]) -> Callable[..., List[BaseNode]]:
    """Wrapper of a parser's ``get_nodes_from_documents``: a NODE_PARSING event (``DOCUMENTS`` →
    ``NODES``) holding one CHUNKING event per document (see :class:`NodeParser`)."""

    def get_nodes_from_documents(self: "NodeParser", *args: Any, **kwargs: Any) -> List[BaseNode]:
        with metadata_warnings_once():  # a call warns once per metadata keys, not per document
            return traced(self, *args, **kwargs)

    def traced(self: "NodeParser", *args: Any, **kwargs: Any) -> List[BaseNode]:
        cm = self.callback_manager
        token = enter_component(self) if cm.handlers else None
        if token is None:
            return fn(self, *args, **kwargs)
        done = _CHUNKED.get()
        outer = None
        if done is None:
            done = set()
            outer = _CHUNKED.set(done)
        try:
            if args:
                docs = list(args[0])
                args = (docs,) + args[1:]
            else:
                docs = list(kwargs.get("documents") or [])
                kwargs["documents"] = docs
            with cm.event(CBEventType.NODE_PARSING, payload={EventPayload.DOCUMENTS: docs}) as event:
                nodes = fn(self, *args, **kwargs)
                _report_chunking(cm, docs, nodes, done)
                event.on_end(payload={EventPayload.NODES: nodes})
            return nodes
        finally:
            if outer is not None:
                _CHUNKED.reset(outer)
            leave_component(token)

    return get_nodes_from_documents


def _traced_split(fn: Callable[..., List[str]]) -> Callable[..., List[str]]:
    """Wrapper of ``split_text`` / ``split_text_metadata_aware`` called directly: a CHUNKING event
    (``CHUNKS: [text]`` → ``CHUNKS: chunks``).  Inside the parser's own ``get_nodes_from_documents``
    it calls through (that call reports per document)."""

    def split(self: "NodeParser", text: str, *args: Any, **kwargs: Any) -> List[str]:
        cm = self.callback_manager
        token = enter_component(self) if cm.handlers else None
        if token is None:
            return fn(self, text, *args, **kwargs)
        try:
            with cm.event(CBEventType.CHUNKING, payload={EventPayload.CHUNKS: [text]}) as event:
                chunks = fn(self, text, *args, **kwargs)
                event.on_end(payload={EventPayload.CHUNKS: chunks})
            return chunks
        finally:
            leave_component(token)

    return split


_PARSER_WRAPPERS: Dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "get_nodes_from_documents": _traced_parse,
    "split_text": _traced_split,
    "split_text_metadata_aware": _traced_split,
}


def carry_source(inputs: Sequence[BaseNode], outputs: List[BaseNode]) -> List[BaseNode]:
    """Give every output whose SOURCE is an input that itself came from a source the input's SOURCE.

    A parser sets each output's SOURCE to the node it split.  When that node is a chunk of a
    document (a second parser in a chain), the output must point to the document instead, so that
    ``ref_doc_id``, ``delete_ref_doc`` and the docstore strategies work per source document
    (LlamaIndex carries the original source through a chain the same way).  Outputs are changed in
    place and returned.  Node ids are not affected: they are derived from the immediate input.

    Offsets follow the source too: an output's ``start_char_idx`` / ``end_char_idx`` are relative to
    the chunk it was cut from, so the chunk's own ``start_char_idx`` is added, and
    ``document.text[node.start_char_idx:node.end_char_idx] == node.text`` holds through a chain.
    """
    parents = {n.id_: n for n in inputs if n.source_node is not None}
    if not parents:
        return outputs
    for out in outputs:
        src = out.source_node
        if src is None or out.id_ == src.node_id:
            continue
        parent = parents.get(src.node_id)
        if parent is None:
            continue
        out.relationships[NodeRelationship.SOURCE] = parent.source_node
        shift = parent.start_char_idx
        if shift and out.start_char_idx is not None and out.end_char_idx is not None:
            out.start_char_idx += shift
            out.end_char_idx += shift
    return outputs


class TextSplitter(NodeParser):
    """A node parser defined by ``split_text(text) -> list[str]``."""

    @abstractmethod
    def split_text(self, text: str) -> List[str]: ...

    def split_texts(self, texts: Sequence[str]) -> List[str]:
        out: List[str] = []
        for t in texts:
            out.extend(self.split_text(t))
        return out


def _wrappers_for(node: BaseNode) -> List[Tuple[str, str, MetadataMode]]:
    """``(prefix, suffix, mode)`` such that ``get_content(mode) == prefix + chunk + suffix``."""
    out: List[Tuple[str, str, MetadataMode]] = []
    template = getattr(node, "text_template", DEFAULT_TEXT_NODE_TMPL)
    # Only the embedded view counts against the chunk budget: the budget is the embed model's
    # input.  What only the LLM sees is fitted where prompts are built (PromptHelper).
    for mode in (MetadataMode.EMBED,):
        meta = node.get_metadata_str(mode).strip()
        if not meta:
            out.append(("", "", mode))
            continue
        full = template.format(content=_SENTINEL, metadata_str=meta)
        parts = full.split(_SENTINEL)
        if len(parts) != 2:
            raise ValueError(f"text_template must contain {{content}} exactly once: {template!r}")
        out.append((parts[0].lstrip(), parts[1].rstrip(), mode))
    return out


#: A document whose embedded metadata takes at least this share of ``chunk_size`` gets one warning
#: (its node count at least doubles); at 0.8 it would grow fivefold.
METADATA_WARN_SHARE = 0.5

#: metadata keys (a tuple) already warned about in the current
#: :func:`metadata_warnings_once` block; ``None`` outside one.
_WARNED: contextvars.ContextVar[Optional[set]] = contextvars.ContextVar("ragloom_metadata_warned", default=None)


@contextlib.contextmanager
def metadata_warnings_once() -> Iterator[None]:
    """Within this block, :func:`check_metadata_overhead` warns once per set of metadata keys (a
    nested block shares the outer one's record).  Opened by every parser's
    ``get_nodes_from_documents`` and ``__call__`` and by each ingestion-engine run, so many
    documents with the same heavy keys, a chain of parsers (whose later parsers see every chunk of
    the document, with its metadata) or a batch retried document by document warn once."""
    if _WARNED.get() is not None:
        yield
        return
    token = _WARNED.set(set())
    try:
        yield
    finally:
        _WARNED.reset(token)


def _source_name(node: Optional[BaseNode], doc_id: Optional[str]) -> str:
    """The document a metadata problem is reported for: ``doc_id``, else the node's source document
    (a chunk split again by a chained parser names its document, not itself)."""
    if node is None:
        return doc_id or "(metadata string)"
    if doc_id is not None and doc_id != node.id_:
        return doc_id
    return node.ref_doc_id or node.id_


@contextlib.contextmanager
def naming_document(node: BaseNode) -> Iterator[None]:
    """Splitting ``node``: a ``ValueError`` raised inside (the text splitters raise one when not even
    one token fits next to the metadata embedded with a chunk) becomes a
    :class:`~ragloom.errors.DocumentError` naming the document (:func:`_source_name`), with the same
    message; a ``DocumentError`` passes unchanged.  Every parser splits each document inside one, so
    a refusal says which document it is (the ingestion engine then fails that document alone)."""
    try:
        yield
    except DocumentError:
        raise
    except ValueError as exc:
        raise DocumentError(_source_name(node, None), str(exc)) from exc


def check_metadata_overhead(
    tokenizer: Any,
    chunk_size: Optional[int],
    wrappers: Sequence[Tuple[str, str, MetadataMode]],
    node: Optional[BaseNode],
    doc_id: Optional[str] = None,
    counts: Optional[Dict[str, int]] = None,
) -> List[Tuple[str, str]]:
    """Distinct ``(prefix, suffix)`` pairs of ``wrappers``, after checking each fits ``chunk_size``
    (``counts``: the splitting call's remembered counts, see :func:`~ragloom.node_parser.text.engine.counted`).

    The metadata a chunk is embedded with must leave room for text: a document whose wrappers take
    ``chunk_size`` tokens or more raises; one whose wrappers take :data:`METADATA_WARN_SHARE` of it
    or more is logged, naming the metadata keys to exclude and the first document: once per set of
    keys inside a :func:`metadata_warnings_once` block (each ingestion run, each
    parser call; each worker process of a split pool has its own), else per call.

    Raises:
        MetadataTooLongError: (a ``ValueError``) the metadata leave no room; names the document and keys.
    """
    from ragloom.errors import MetadataTooLongError

    uniq: List[Tuple[str, str]] = []
    for p, s, mode in wrappers:
        if (p, s) in uniq:
            continue
        uniq.append((p, s))
        if not p and not s or chunk_size is None:
            continue
        from ragloom.node_parser.text.engine import counted  # here: the package imports this module

        used = counted(tokenizer, p, counts) + counted(tokenizer, s, counts)
        if used * 1.0 < chunk_size * METADATA_WARN_SHARE:
            continue
        keys = tuple(node._visible_metadata(mode).keys()) if node is not None else ()
        who = _source_name(node, doc_id)
        doc = repr(who)
        if used >= chunk_size:
            raise MetadataTooLongError(
                who,
                f"metadata keys {list(keys)} take {used} tokens in {mode.value} mode, leaving no room "
                f"within chunk_size={chunk_size}; increase chunk_size or exclude keys "
                "(excluded_embed_metadata_keys)",
                keys,
            )
        _warn_heavy(keys, (doc, list(keys), used, chunk_size, chunk_size - used))
    return uniq


_HEAVY_WARNING = (
    "document %s: metadata keys %s take %d of %d tokens, so its chunks hold at most %d tokens "
    "of text; exclude keys from embedding (excluded_embed_metadata_keys) or raise chunk_size "
    "(not repeated for other documents with these keys)"
)


def _warn_heavy(keys: Tuple[str, ...], args: Tuple[Any, ...]) -> None:
    """Log the heavy-metadata warning (:data:`_HEAVY_WARNING` % ``args``) unless ``keys`` were warned
    about in this :func:`metadata_warnings_once` block (a chained parser with another chunk_size
    included: one warning); inside :func:`deferred_metadata_warnings`, hold it back instead."""
    warned = _WARNED.get()
    if warned is not None:
        if keys in warned:
            return
        warned.add(keys)
    deferred = _DEFERRED.get()
    if deferred is not None:
        deferred.append((keys, args))
        return
    logger.warning(_HEAVY_WARNING, *args)


#: the heavy-metadata warnings held back in the current :func:`deferred_metadata_warnings` block
_DEFERRED: contextvars.ContextVar[Optional[List[Tuple[Tuple[str, ...], Tuple[Any, ...]]]]] = (
    contextvars.ContextVar("ragloom_metadata_deferred", default=None)
)


@contextlib.contextmanager
def deferred_metadata_warnings() -> Iterator[List[Tuple[Tuple[str, ...], Tuple[Any, ...]]]]:
    """Within this block the heavy-metadata warnings of :func:`check_metadata_overhead` are not
    logged but collected, as picklable ``(keys, args)`` pairs, into the list it yields.  A worker
    process of the ingestion engine's split pool splits inside one and returns the list; the parent
    logs it with :func:`log_metadata_warnings`, in its own warn-once block, so ``num_workers`` > 1
    warns once per set of keys per run, in the parent's log, as one process does."""
    out: List[Tuple[Tuple[str, ...], Tuple[Any, ...]]] = []
    token = _DEFERRED.set(out)
    try:
        yield out
    finally:
        _DEFERRED.reset(token)


def log_metadata_warnings(warnings: Sequence[Tuple[Tuple[str, ...], Tuple[Any, ...]]]) -> None:
    """Log warnings collected by :func:`deferred_metadata_warnings` (each set of keys once per
    :func:`metadata_warnings_once` block, as if raised here)."""
    for keys, args in warnings:
        _warn_heavy(tuple(keys), tuple(args))


def validate_chunk_args(chunk_size: Optional[int], chunk_overlap: Optional[int], size_optional: bool = False) -> None:
    """Raise ``ValueError`` naming the values unless ``0 <= chunk_overlap < chunk_size``
    (``chunk_size=None`` is allowed when ``size_optional``: no token budget), or when either is
    not an integer (``"100"``, ``2.5`` and ``True`` are refused, not converted)."""
    for name, value in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise ValueError(f"{name} must be an integer number of tokens, got {value!r}")
    if chunk_size is None and not size_optional or chunk_size is not None and int(chunk_size) <= 0:
        raise ValueError(f"chunk_size must be > 0, got chunk_size={chunk_size}")
    if chunk_overlap is None or int(chunk_overlap) < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got chunk_overlap={chunk_overlap}")
    if chunk_size is not None and int(chunk_overlap) >= int(chunk_size):
        raise ValueError(f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})")


class ChunkConfigMixin:
    """``to_config()`` and its cached digest for parsers with ``chunk_size``, ``chunk_overlap``,
    ``tokenizer``, ``include_metadata`` and ``include_prev_next_rel``; subclasses add their own
    keys in ``_config_extra``.  The digest enters node ids, so equal configs give equal ids.

    The configuration stays assignable (``splitter.chunk_size = 30``): every assignment drops the
    cached digest, so a changed parser gives the nodes and ids of one built with the new values.
    """

    _config_digest: Optional[str] = None
    #: ``chunk_size=None`` (no token budget) is a valid value (the format parsers)
    _chunk_size_optional: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        """Set an attribute and drop the cached config digest.

        Re-assigning a public attribute of a constructed parser treats the value as the
        constructor does: ``chunk_size`` / ``chunk_overlap`` are validated as a pair and stored as
        ``int`` (so lower ``chunk_overlap`` first when lowering ``chunk_size`` below it; ``None``
        means "no budget" where the class allows that, never "the default" as in ``__init__``), and
        ``tokenizer`` is resolved (``None``: ``Settings.tokenizer``; a name, path or callable:
        :func:`~ragloom.tokenizers.get_tokenizer`); then :meth:`_config_changed` runs.

        Raises:
            ValueError: the new ``chunk_size``/``chunk_overlap`` fails :func:`validate_chunk_args`,
                or the new ``tokenizer`` is unknown; the attribute keeps its old value.
        """
        reassigned = not name.startswith("_") and name in self.__dict__
        if reassigned:
            value = self._resolve_config_value(name, value)
        super().__setattr__(name, value)
        if name != "_config_digest":
            super().__setattr__("_config_digest", None)
        if reassigned:
            self._config_changed(name)

    def _resolve_config_value(self, name: str, value: Any) -> Any:
        if name in ("chunk_size", "chunk_overlap"):
            size = value if name == "chunk_size" else self.__dict__.get("chunk_size")
            overlap = value if name == "chunk_overlap" else self.__dict__.get("chunk_overlap")
            validate_chunk_args(size, overlap, size_optional=self._chunk_size_optional)
            return None if value is None else int(value)
        if name == "tokenizer":
            if value is None:
                from ragloom.settings import Settings

                return Settings.tokenizer
            from ragloom.tokenizers import get_tokenizer

            return get_tokenizer(value)
        return value

    def _config_changed(self, name: str) -> None:
        """Hook: public attribute ``name`` of a constructed parser was re-assigned; drop what was
        derived from it (the digest is already dropped)."""

    def _config_extra(self) -> Dict[str, Any]:
        return {}

    def _tokenizer_config(self) -> Any:
        return self.tokenizer.name  # type: ignore[attr-defined]

    def to_config(self) -> Dict[str, Any]:
        cfg: Dict[str, Any] = {
            "class_name": self.class_name(),  # type: ignore[attr-defined]
            "chunk_size": self.chunk_size,  # type: ignore[attr-defined]
            "chunk_overlap": self.chunk_overlap,  # type: ignore[attr-defined]
            "tokenizer": self._tokenizer_config(),
            "include_metadata": self.include_metadata,  # type: ignore[attr-defined]
            "include_prev_next_rel": self.include_prev_next_rel,  # type: ignore[attr-defined]
        }
        cfg.update(self._config_extra())
        return cfg

    def _digest(self) -> str:
        if self._config_digest is None:
            self._config_digest = hashlib.sha256(
                json.dumps(self.to_config(), sort_keys=True, default=str).encode("utf-8")
            ).hexdigest()
        return self._config_digest

    def _node_id(self, i: int, ref_id: str, a: int, b: int, chunk: str) -> str:
        """The id of chunk ``i`` (``chunk == text[a:b]``) of node ``ref_id`` under this parser's
        configuration: :func:`~ragloom.node_parser.nodes.node_ids`, the one id function of every
        parser (the node builder calls it)."""
        from ragloom.node_parser.nodes import node_ids

        return node_ids(ref_id, self._digest(), [(a, b)], [chunk], first=i)[0]


#: Characters of the longest piece of one document tokenized at once.  A longer text is split into
#: sections (cut at a paragraph break, else a line break, else a space, in the last quarter of the
#: section; else hard), each packed on its own, so memory stays bounded by the section, not the file:
#: a 5 MB line of words took 736 MB to split whole (offsets are Python objects), 50 MB would take 7 GB.
#: Chunks do not cross a section boundary; texts up to this size are split exactly as before.
SECTION_CHARS = 262_144


def text_sections(text: str, size: Optional[int] = None) -> List[Span]:
    """``[(start, end), ...]`` covering ``text`` in order, each at most ``size`` characters
    (default :data:`SECTION_CHARS`); one section for a text up to ``size``."""
    size = SECTION_CHARS if size is None else size
    n = len(text)
    if n <= size:
        return [(0, n)]
    out: List[Span] = []
    a = 0
    while n - a > size:
        hi = a + size
        lo = a + size * 3 // 4
        cut = -1
        for sep in ("\n\n", "\n", " "):
            i = text.rfind(sep, lo, hi)
            if i != -1:
                cut = i + len(sep)
                break
        if cut <= a:
            cut = hi
        out.append((a, cut))
        a = cut
    out.append((a, n))
    return out


class _Piece(NamedTuple):
    """One section of one document: ``text[start:end]`` of the document's ``full`` text."""

    doc: BaseNode
    full: str
    start: int
    end: int
    last: bool  # the document's last section

    @property
    def text(self) -> str:
        return self.full[self.start : self.end] if (self.start, self.end) != (0, len(self.full)) else self.full


def _char_batches(todo: List[_Piece], limit: int = _BATCH_CHARS) -> List[List[_Piece]]:
    """``todo`` in order, cut into runs of at most ``limit`` characters (a longer section alone)."""
    batches: List[List[_Piece]] = []
    i = 0
    while i < len(todo):
        j, size = i, 0
        while j < len(todo) and (j == i or size + todo[j].end - todo[j].start <= limit):
            size += todo[j].end - todo[j].start
            j += 1
        batches.append(todo[i:j])
        i = j
    return batches


class MetadataAwareTextSplitter(ChunkConfigMixin, TextSplitter):
    """Shared machinery of the span-engine splitters (subclasses define the boundary levels)."""

    def __init__(
        self,
        chunk_size: Optional[int],
        chunk_overlap: Optional[int],
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
    ) -> None:
        from ragloom.settings import resolve_chunk_args

        chunk_size, chunk_overlap = resolve_chunk_args(chunk_size, chunk_overlap)
        validate_chunk_args(chunk_size, chunk_overlap)
        self.chunk_size = int(chunk_size)
        self.chunk_overlap = int(chunk_overlap)
        from ragloom.tokenizers import get_tokenizer

        if tokenizer is None:
            from ragloom.settings import Settings

            self.tokenizer = Settings.tokenizer
        else:
            self.tokenizer = get_tokenizer(tokenizer)
        self.include_metadata = include_metadata
        self.include_prev_next_rel = include_prev_next_rel
        self.id_func = id_func
        self._config_digest: Optional[str] = None

    # -- subclass hooks ------------------------------------------------------------------
    @abstractmethod
    def _levels(self) -> list: ...

    # -- config ------------------------------------------------------------------------
    @classmethod
    def from_defaults(cls, **kwargs: Any) -> "MetadataAwareTextSplitter":
        return cls(**kwargs)

    # -- spans -------------------------------------------------------------------------
    def _pack(
        self, text: str, sizer: Any, wrappers: Sequence[Tuple[str, str]], counts: Optional["CallCounts"] = None
    ) -> List[Span]:
        """Spans of ``text`` (see :func:`~ragloom.node_parser.text.engine.pack_spans`); ``counts``:
        the counts the texts of one call share (:class:`~ragloom.node_parser.text.engine.CallCounts`)."""
        from ragloom.node_parser.text.engine import ExactCounter, pack_spans

        return pack_spans(
            text,
            self._levels(),
            sizer,
            ExactCounter(self.tokenizer, sizer, counts),
            self.chunk_size,
            self.chunk_overlap,
            wrappers,
        )

    def _check_overhead(
        self,
        wrappers: Sequence[Tuple[str, str, MetadataMode]],
        node: Optional[BaseNode],
        counts: Optional[Dict[str, int]] = None,
    ) -> List[Tuple[str, str]]:
        return check_metadata_overhead(self.tokenizer, self.chunk_size, wrappers, node, counts=counts)

    def split_spans(self, text: str, metadata_str: Optional[str] = None) -> List[Span]:
        """``(start, end)`` character spans of the chunks of ``text`` (whitespace-stripped).

        With ``metadata_str``, each chunk plus ``metadata_str + "\\n\\n"`` fits ``chunk_size``.
        """
        from ragloom.node_parser.text.engine import CallCounts, make_sizers

        if not text or text.isspace():
            return []
        wrappers: List[Tuple[str, str, MetadataMode]] = [("", "", MetadataMode.NONE)]
        if metadata_str is not None and metadata_str.strip():
            wrappers = [(metadata_str.strip() + "\n\n", "", MetadataMode.EMBED)]
        counts = CallCounts()
        uniq = self._check_overhead(wrappers, None, counts.headers)
        spans: List[Span] = []
        for a, b in text_sections(text):
            section = text if (a, b) == (0, len(text)) else text[a:b]
            sizer = make_sizers(self.tokenizer, [section])[0]
            spans.extend((x + a, y + a) for x, y in self._pack(section, sizer, uniq, counts))
        return spans

    def split_text(self, text: str) -> List[str]:
        return [text[a:b] for a, b in self.split_spans(text)]

    def split_text_metadata_aware(self, text: str, metadata_str: str) -> List[str]:
        return [text[a:b] for a, b in self.split_spans(text, metadata_str)]

    # -- nodes -------------------------------------------------------------------------
    def _build_nodes(self, node: BaseNode, text: str, spans: List[Span]) -> List[TextNode]:
        """Nodes of ``spans`` of ``text`` (``node``'s content), built by the one node builder
        (:func:`~ragloom.node_parser.nodes.build_nodes`)."""
        from ragloom.node_parser.nodes import build_nodes

        return build_nodes(self, node, spans, [text[a:b] for a, b in spans])

    def _pack_piece(
        self, piece: "_Piece", sizer: Any, wrappers: Sequence[Tuple[str, str]], counts: "CallCounts"
    ) -> List[Span]:
        """:meth:`_pack` of one piece of a document; a ``ValueError`` (no room for the text next to
        its metadata) becomes a :class:`~ragloom.errors.DocumentError` naming the document, which the
        ingestion engine fails alone."""
        with naming_document(piece.doc):
            return self._pack(piece.text, sizer, wrappers, counts)

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        from ragloom.node_parser.text.engine import CallCounts, make_sizers

        todo: List[_Piece] = []
        for doc in documents:
            text = doc.get_content(MetadataMode.NONE)
            if text and not text.isspace():
                sections = text_sections(text)
                todo.extend(_Piece(doc, text, a, b, k == len(sections) - 1) for k, (a, b) in enumerate(sections))
        result: List[BaseNode] = []
        bar = None
        if show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(p.last for p in todo), desc="Parsing nodes")
        # Tokenize small batches of documents in a background thread a few batches ahead of this
        # thread, which packs and builds nodes, when the tokenizer releases the GIL (Hugging Face
        # tokenizers): small batches let packing start early, so the two overlap on two or more
        # cores.  A tokenizer that holds the GIL (tiktoken) tokenizes in turn, megabytes at a time
        # (:data:`_SEQUENTIAL_BATCH_CHARS`): a thread would only add switching (measured: 30% more
        # CPU time for no gain in wall time).
        batches = _char_batches(todo, _BATCH_CHARS if self.tokenizer.releases_gil else _SEQUENTIAL_BATCH_CHARS)
        if not batches:
            return result
        # the spans and metadata wrappers of the document being packed, section by section
        spans: List[Span] = []
        uniq: List[Tuple[str, str]] = []
        counts = CallCounts()  # shared by the documents of this call

        def handle(batch: List[_Piece], sizers: list) -> None:
            nonlocal spans, uniq
            for piece, sizer in zip(batch, sizers, strict=True):
                if piece.start == 0:
                    wrappers = _wrappers_for(piece.doc) if self.include_metadata else [("", "", MetadataMode.NONE)]
                    uniq = self._check_overhead(wrappers, piece.doc, counts.headers)
                    spans = []
                shift = piece.start
                packed = self._pack_piece(piece, sizer, uniq, counts)
                spans.extend((a + shift, b + shift) for a, b in packed)
                if piece.last:
                    result.extend(self._build_nodes(piece.doc, piece.full, spans))
                    spans = []
                    if bar is not None:
                        bar.update(1)

        if len(batches) == 1 or not self.tokenizer.releases_gil:
            for batch in batches:
                handle(batch, make_sizers(self.tokenizer, [p.text for p in batch]))
        else:
            from collections import deque
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=1) as pool:
                pending: deque = deque()
                nxt = 0
                for batch in batches:
                    while nxt < len(batches) and len(pending) < _AHEAD:
                        pending.append(pool.submit(make_sizers, self.tokenizer, [p.text for p in batches[nxt]]))
                        nxt += 1
                    handle(batch, pending.popleft().result())
        if bar is not None:
            bar.close()
        return result
