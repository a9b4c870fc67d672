"""Base classes of node parsers (LlamaIndex names): ``NodeParser``, ``TextSplitter``,
``MetadataAwareTextSplitter``.

A node parser is a :class:`~ragloom.schema.TransformComponent`: ``parser(nodes)`` returns
the chunk nodes of every input node.  Text splitters built on the span engine share
:class:`MetadataAwareTextSplitter`, which turns spans into nodes (offsets exact by
construction, deterministic ids, SOURCE/PREVIOUS/NEXT relationships).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from abc import abstractmethod
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import msgspec

from ragloom.schema import (
    DEFAULT_TEXT_NODE_TMPL,
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)

logger = logging.getLogger(__name__)

__all__ = ["NodeParser", "TextSplitter", "MetadataAwareTextSplitter", "IdFuncCallable"]

IdFuncCallable = Callable[[int, BaseNode], str]
Span = Tuple[int, int]
_SENTINEL = "\x00ragloom-content\x00"
_BATCH_CHARS = 131_072  # characters per tokenization batch
_AHEAD = 8  # batches tokenized ahead of packing (bounds memory)


class NodeParser(TransformComponent):
    """Turns nodes (usually documents) into chunk nodes."""

    include_metadata: bool = True
    include_prev_next_rel: bool = True

    @abstractmethod
    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]: ...

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        return self.get_nodes_from_documents(nodes, **kwargs)


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
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
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


def validate_chunk_args(chunk_size: Optional[int], chunk_overlap: Optional[int], size_optional: bool = False) -> None:
    """Raise ``ValueError`` naming the values unless ``0 <= chunk_overlap < chunk_size``
    (``chunk_size=None`` is allowed when ``size_optional``: no token budget)."""
    if chunk_size is None and not size_optional or chunk_size is not None and int(chunk_size) <= 0:
        raise ValueError(f"chunk_size must be > 0, got chunk_size={chunk_size}")
    if chunk_overlap is None or int(chunk_overlap) < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got chunk_overlap={chunk_overlap}")
    if chunk_size is not None and int(chunk_overlap) >= int(chunk_size):
        raise ValueError(f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})")


class ChunkConfigMixin:
    """``to_config()`` and its cached digest for parsers with ``chunk_size``, ``chunk_overlap``,
    ``tokenizer``, ``include_metadata`` and ``include_prev_next_rel``; subclasses add their own
    keys in ``_config_extra``.  The digest enters node ids, so equal configs give equal ids."""

    _config_digest: Optional[str] = None

    def _config_extra(self) -> Dict[str, Any]:
        return {}

    def _tokenizer_config(self) -> Any:
        tok = self.tokenizer  # type: ignore[attr-defined]
        return getattr(tok, "name", repr(tok))

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


class MetadataAwareTextSplitter(ChunkConfigMixin, TextSplitter):
    """Shared machinery of the span-engine splitters (subclasses define the boundary levels)."""

    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int,
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
    ) -> None:
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
    def _pack(self, text: str, sizer: Any, wrappers: Sequence[Tuple[str, str]]) -> List[Span]:
        from ragloom.node_parser.text.engine import ExactCounter, pack_spans

        return pack_spans(
            text,
            self._levels(),
            sizer,
            ExactCounter(self.tokenizer, sizer),
            self.chunk_size,
            self.chunk_overlap,
            wrappers,
        )

    def _check_overhead(self, wrappers: Sequence[Tuple[str, str, MetadataMode]], node: Optional[BaseNode]) -> List[Tuple[str, str]]:
        uniq: List[Tuple[str, str]] = []
        for p, s, mode in wrappers:
            if (p, s) in uniq:
                continue
            uniq.append((p, s))
            if not p and not s:
                continue
            used = self.tokenizer.count(p) + self.tokenizer.count(s)
            if used >= self.chunk_size:
                if node is not None:
                    keys = list(node._visible_metadata(mode).keys())
                    where = f"document {node.id_!r}: metadata keys {keys}"
                else:
                    where = "metadata string"
                raise ValueError(
                    f"{where} take {used} tokens in {mode.value} mode, leaving no room within "
                    f"chunk_size={self.chunk_size}; increase chunk_size or exclude metadata keys "
                    "(excluded_embed_metadata_keys / excluded_llm_metadata_keys)"
                )
            if self.chunk_size - used < 50:
                logger.warning(
                    "metadata takes %d of %d tokens; chunks will be small", used, self.chunk_size
                )
        return uniq

    def split_spans(self, text: str, metadata_str: Optional[str] = None) -> List[Span]:
        """``(start, end)`` character spans of the chunks of ``text`` (whitespace-stripped).

        With ``metadata_str``, each chunk plus ``metadata_str + "\\n\\n"`` fits ``chunk_size``.
        """
        from ragloom.node_parser.text.engine import make_sizers

        if not text or text.isspace():
            return []
        wrappers: List[Tuple[str, str, MetadataMode]] = [("", "", MetadataMode.NONE)]
        if metadata_str is not None and metadata_str.strip():
            wrappers = [(metadata_str.strip() + "\n\n", "", MetadataMode.EMBED)]
        uniq = self._check_overhead(wrappers, None)
        sizer = make_sizers(self.tokenizer, [text])[0]
        return self._pack(text, sizer, uniq)

    def split_text(self, text: str) -> List[str]:
        return [text[a:b] for a, b in self.split_spans(text)]

    def split_text_metadata_aware(self, text: str, metadata_str: str) -> List[str]:
        return [text[a:b] for a, b in self.split_spans(text, metadata_str)]

    # -- nodes -------------------------------------------------------------------------
    def _node_id(self, i: int, ref_id: str, a: int, b: int, chunk: str) -> str:
        h = hashlib.sha256()
        h.update(f"{ref_id}\x00{i}\x00{a}\x00{b}\x00{self._digest()}\x00".encode("utf-8", "surrogatepass"))
        h.update(chunk.encode("utf-8", "surrogatepass"))
        return str(uuid.UUID(hex=h.hexdigest()[:32]))

    def _build_nodes(self, node: BaseNode, text: str, spans: List[Span]) -> List[TextNode]:
        """Nodes of ``spans``; the per-document parts (template, metadata, the SOURCE info,
        the metadata half of the content hash) are computed once, not per node.

        Ids equal :meth:`_node_id`; PREVIOUS/NEXT hashes equal each node's ``hash``
        (``tests/node_parser/test_fast_paths.py`` checks both against the plain forms).
        """
        if not spans:
            return []
        src = node.as_related_node_info()  # hashes the whole text: once per document
        ref_id = node.id_
        meta = node.metadata if self.include_metadata else {}
        ex_embed = list(node.excluded_embed_metadata_keys)
        ex_llm = list(node.excluded_llm_metadata_keys)
        mtmpl, msep = node.metadata_template, node.metadata_separator
        ttmpl = getattr(node, "text_template", DEFAULT_TEXT_NODE_TMPL)
        mime = getattr(node, "mimetype", "text/plain")
        digest = self._digest()
        id_func = self.id_func
        sha256 = hashlib.sha256
        n_sp = len(spans)
        links = self.include_prev_next_rel and n_sp > 1
        chunks: List[str] = []
        ids: List[str] = []
        hashes: List[str] = []
        if links:
            both = set(ex_embed) & set(ex_llm)
            meta_tail = b"\x00" + msgspec.json.encode(
                {k: v for k, v in meta.items() if k not in both}, order="sorted"
            )
        for i, (a, b) in enumerate(spans):
            chunk = text[a:b]
            chunks.append(chunk)
            data = chunk.encode("utf-8", "surrogatepass")
            if id_func is None:
                h = sha256(f"{ref_id}\x00{i}\x00{a}\x00{b}\x00{digest}\x00".encode("utf-8", "surrogatepass"))
                h.update(data)
                x = h.hexdigest()
                ids.append(f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}")  # == str(uuid.UUID(hex=x[:32]))
            else:
                ids.append(id_func(i, node))
            if links:
                h = sha256(data)
                h.update(meta_tail)
                hashes.append(h.hexdigest())
        out: List[TextNode] = []
        SOURCE, PREV, NEXT = NodeRelationship.SOURCE, NodeRelationship.PREVIOUS, NodeRelationship.NEXT
        ntype: Optional[str] = None
        infos: List[RelatedNodeInfo] = []
        if links:
            ntype = TextNode(text="").get_type()
            infos = [RelatedNodeInfo(node_id=nid, node_type=ntype, hash=hx) for nid, hx in zip(ids, hashes)]
        for i, (a, b) in enumerate(spans):
            rels: Dict[NodeRelationship, Any] = {SOURCE: src}
            if links:
                if i > 0:
                    rels[PREV] = infos[i - 1]
                if i + 1 < n_sp:
                    rels[NEXT] = infos[i + 1]
            out.append(
                TextNode(
                    id_=ids[i],
                    text=chunks[i],
                    start_char_idx=a,
                    end_char_idx=b,
                    metadata=dict(meta),
                    excluded_embed_metadata_keys=list(ex_embed),
                    excluded_llm_metadata_keys=list(ex_llm),
                    metadata_template=mtmpl,
                    metadata_separator=msep,
                    text_template=ttmpl,
                    mimetype=mime,
                    relationships=rels,
                )
            )
        return out

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        from ragloom.node_parser.text.engine import make_sizers

        todo: List[Tuple[BaseNode, str]] = []
        for doc in documents:
            text = doc.get_content(MetadataMode.NONE)
            if text and not text.isspace():
                todo.append((doc, text))
        result: List[BaseNode] = []
        bar = None
        if show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc="Parsing nodes")
        # Tokenize small batches of documents in a background thread (tokenizers release
        # the GIL) a few batches ahead of this thread, which packs and builds nodes; small
        # batches let packing start early, so the two overlap on two or more cores.
        batches: List[List[Tuple[BaseNode, str]]] = []
        i = 0
        while i < len(todo):
            j, size = i, 0
            while j < len(todo) and (j == i or size + len(todo[j][1]) <= _BATCH_CHARS):
                size += len(todo[j][1])
                j += 1
            batches.append(todo[i:j])
            i = j
        if not batches:
            return result

        def handle(batch: List[Tuple[BaseNode, str]], sizers: list) -> None:
            for (doc, text), sizer in zip(batch, sizers):
                if self.include_metadata:
                    wrappers = _wrappers_for(doc)
                else:
                    wrappers = [("", "", MetadataMode.NONE)]
                uniq = self._check_overhead(wrappers, doc)
                spans = self._pack(text, sizer, uniq)
                result.extend(self._build_nodes(doc, text, spans))
                if bar is not None:
                    bar.update(1)

        if len(batches) == 1:
            handle(batches[0], make_sizers(self.tokenizer, [t for _, t in batches[0]]))
        else:
            from collections import deque
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=1) as pool:
                pending: deque = deque()
                nxt = 0
                for batch in batches:
                    while nxt < len(batches) and len(pending) < _AHEAD:
                        pending.append(pool.submit(make_sizers, self.tokenizer, [t for _, t in batches[nxt]]))
                        nxt += 1
                    handle(batch, pending.popleft().result())
        if bar is not None:
            bar.close()
        return result
