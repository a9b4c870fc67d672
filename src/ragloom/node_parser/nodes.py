"""The one node builder and the one id function of every node parser.

Every parser ends the same way: it has the ``[start, end)`` character ranges of its chunks
(with, for the format parsers, the metadata the format adds to each one: ``header_path``,
``start_line`` …) and turns them into :class:`~ragloom.schema.TextNode` s with
:func:`build_nodes`.  The text splitters (``SentenceSplitter``, ``TokenTextSplitter``, the window
and semantic splitters) and the format parsers (Markdown, HTML, JSON, code) all call it, so ids,
metadata, exclusions and SOURCE/PREVIOUS/NEXT relationships are built by one piece of code.

What is the same for every chunk of a document (its metadata, templates, the SOURCE link, the
metadata half of the content hash) is computed once per document, not per node; a piece with
metadata of its own pays only for that piece.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ragloom.schema import (
    DEFAULT_TEXT_NODE_TMPL,
    BaseNode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    metadata_json,
)

__all__ = ["Piece", "build_nodes", "node_ids", "piece_metadata"]

Span = Tuple[int, int]
#: What a chunk adds to its document's metadata: ``(metadata, hidden_embed, hidden_llm)``
Extra = Tuple[Dict[str, Any], Sequence[str], Sequence[str]]


class Piece(NamedTuple):
    """One future node: its text, offsets into the document text, and added metadata."""

    text: str
    start: int
    end: int
    metadata: Dict[str, Any] = {}
    hidden_embed: Tuple[str, ...] = ()  # added keys hidden from the embed view
    hidden_llm: Tuple[str, ...] = ()  # added keys hidden from the LLM view


def node_ids(ref_id: str, config_digest: str, spans: Sequence[Span], texts: Sequence[str], first: int = 0) -> List[str]:
    """The ids of chunks ``first, first + 1, …`` (``texts[k]`` at ``spans[k]``) of node ``ref_id``
    made by a parser whose configuration digest is ``config_digest``: sha256 of (source id,
    ordinal, span, digest, text) as a UUID string, so the same input and configuration always
    give the same ids.  The one id function of every parser (a batch, to keep per-node cost low)."""
    return _ids(ref_id, config_digest, spans, [t.encode("utf-8", "surrogatepass") for t in texts], first)


def _ids(ref_id: str, config_digest: str, spans: Sequence[Span], raw: Sequence[bytes], first: int = 0) -> List[str]:
    """:func:`node_ids` of chunks given as their UTF-8 bytes (``surrogatepass``)."""
    sha256 = hashlib.sha256
    out: List[str] = []
    for i, ((a, b), chunk) in enumerate(zip(spans, raw, strict=True), first):
        h = sha256(f"{ref_id}\x00{i}\x00{a}\x00{b}\x00{config_digest}\x00".encode("utf-8", "surrogatepass"))
        h.update(chunk)
        x = h.hexdigest()
        out.append(f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}")  # == str(uuid.UUID(hex=x[:32]))
    return out


def piece_metadata(
    doc: BaseNode,
    include_metadata: bool,
    meta: Dict[str, Any],
    hidden_embed: Sequence[str] = (),
    hidden_llm: Sequence[str] = (),
) -> Tuple[Dict[str, Any], List[str], List[str]]:
    """``(metadata, excluded_embed_keys, excluded_llm_keys)`` of a chunk of ``doc`` that adds
    ``meta`` (keys ``hidden_embed`` / ``hidden_llm`` of it hidden from those views): the
    document's metadata (when ``include_metadata``) updated with ``meta``, and the document's
    exclusions followed by the hidden keys it does not already exclude."""
    out = dict(doc.metadata) if include_metadata else {}
    out.update(meta)
    d_e, d_l = doc.excluded_embed_metadata_keys, doc.excluded_llm_metadata_keys
    ex_embed = list(d_e) + [k for k in hidden_embed if k not in d_e]
    ex_llm = list(d_l) + [k for k in hidden_llm if k not in d_l]
    return out, ex_embed, ex_llm


def _content_tail(meta: Dict[str, Any], ex_embed: Sequence[str], ex_llm: Sequence[str]) -> bytes:
    """The metadata half of :attr:`BaseNode.hash`: ``b"\\x00" +`` the sorted JSON of
    :attr:`BaseNode.content_metadata`."""
    both = set(ex_embed) & set(ex_llm)
    return b"\x00" + metadata_json({k: v for k, v in meta.items() if k not in both})


def build_nodes(
    parser: Any,
    doc: BaseNode,
    spans: Sequence[Span],
    texts: Sequence[str],
    extras: Optional[Sequence[Optional[Extra]]] = None,
    link_metadata: bool = False,
) -> List[TextNode]:
    """The nodes of the chunks ``texts`` at ``spans`` (``[start, end)`` offsets into ``doc``'s
    text) of ``doc``, in order; ``extras[k]``, when given and not ``None``, is the
    ``(metadata, hidden_embed, hidden_llm)`` chunk ``k`` adds (see :func:`piece_metadata`).

    ``parser`` supplies ``include_metadata``, ``include_prev_next_rel``, ``id_func`` and
    ``_digest()`` (:class:`~ragloom.node_parser.interface.ChunkConfigMixin`).  Each node has:

    - id ``id_func(k, doc)`` if the parser has one, else from :func:`node_ids`;
    - the metadata and exclusions of :func:`piece_metadata`; ``doc``'s templates and mimetype;
    - SOURCE ``doc.as_related_node_info()``; with ``include_prev_next_rel``, PREVIOUS/NEXT
      pointing to its neighbours, whose ``hash`` equals the neighbour's :attr:`~BaseNode.hash`
      (computed here from the text and metadata, without building a probe node).  With
      ``link_metadata`` these links also carry a copy of the neighbour's metadata, as
      ``as_related_node_info()`` does (the format parsers, whose pieces differ in metadata);
      the text splitters' links leave it empty (every chunk has the document's metadata).
    """
    n = len(spans)
    if not n:
        return []
    src = doc.as_related_node_info()  # hashes the whole text: once per document
    base = piece_metadata(doc, parser.include_metadata, {})
    metas: List[Tuple[Dict[str, Any], List[str], List[str]]] = [base] * n
    own: List[bool] = [False] * n
    if extras is not None:
        for k, extra in enumerate(extras):
            if extra is not None and any(extra):
                metas[k] = piece_metadata(doc, parser.include_metadata, *extra)
                own[k] = True
    mtmpl, msep = doc.metadata_template, doc.metadata_separator
    ttmpl = getattr(doc, "text_template", DEFAULT_TEXT_NODE_TMPL)
    mime = getattr(doc, "mimetype", "text/plain")
    id_func = parser.id_func
    links = parser.include_prev_next_rel and n > 1
    # each chunk's bytes, encoded once for its id and its hash
    raw = [t.encode("utf-8", "surrogatepass") for t in texts] if id_func is None or links else []
    if id_func is None:
        ids = _ids(doc.id_, parser._digest(), spans, raw)
    else:
        ids = [id_func(k, doc) for k in range(n)]

    infos: List[RelatedNodeInfo] = []
    if links:
        sha256 = hashlib.sha256
        base_tail = _content_tail(*base)
        ntype = TextNode(id_="", text="").get_type()  # an id given: no random one drawn
        for k in range(n):
            h = sha256(raw[k])
            h.update(_content_tail(*metas[k]) if own[k] else base_tail)
            if link_metadata:
                infos.append(
                    RelatedNodeInfo(node_id=ids[k], node_type=ntype, metadata=dict(metas[k][0]), hash=h.hexdigest())
                )
            else:
                infos.append(RelatedNodeInfo(node_id=ids[k], node_type=ntype, hash=h.hexdigest()))
    SOURCE, PREV, NEXT = NodeRelationship.SOURCE, NodeRelationship.PREVIOUS, NodeRelationship.NEXT
    out: List[TextNode] = []
    for k in range(n):
        rels: Dict[NodeRelationship, Any] = {SOURCE: src}
        if links:
            if k > 0:
                rels[PREV] = infos[k - 1]
            if k + 1 < n:
                rels[NEXT] = infos[k + 1]
        meta, ex_e, ex_l = metas[k]
        a, b = spans[k]
        out.append(
            TextNode(
                id_=ids[k],
                text=texts[k],
                start_char_idx=a,
                end_char_idx=b,
                metadata=dict(meta),
                excluded_embed_metadata_keys=list(ex_e),
                excluded_llm_metadata_keys=list(ex_l),
                metadata_template=mtmpl,
                metadata_separator=msep,
                text_template=ttmpl,
                mimetype=mime,
                relationships=rels,
            )
        )
    return out
