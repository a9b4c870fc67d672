"""``HierarchicalNodeParser``: nested chunks (e.g. 2048 → 512 → 128 tokens) linked by
PARENT/CHILD relationships, for auto-merging retrieval (retrieve small leaves, merge
them up into their parent when enough siblings are hit).

The tree helpers :func:`get_leaf_nodes`, :func:`get_root_nodes`, :func:`get_child_nodes`
and :func:`get_deeper_nodes` work on any list of nodes carrying those relationships.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence

from ragloom.node_parser.interface import (
    IdFuncCallable,
    MetadataAwareTextSplitter,
    NodeParser,
)
from ragloom.schema import BaseNode, MetadataMode, NodeRelationship, RelatedNodeInfo

logger = logging.getLogger(__name__)

__all__ = [
    "HierarchicalNodeParser",
    "get_leaf_nodes",
    "get_root_nodes",
    "get_child_nodes",
    "get_deeper_nodes",
    "DEFAULT_CHUNK_SIZES",
]

DEFAULT_CHUNK_SIZES = [2048, 512, 128]
DEFAULT_CHUNK_OVERLAP = 20


def get_leaf_nodes(nodes: Sequence[BaseNode]) -> List[BaseNode]:
    """The nodes without a CHILD relationship, in input order."""
    return [n for n in nodes if NodeRelationship.CHILD not in n.relationships]


def get_root_nodes(nodes: Sequence[BaseNode]) -> List[BaseNode]:
    """The nodes without a PARENT relationship, in input order."""
    return [n for n in nodes if NodeRelationship.PARENT not in n.relationships]


def get_child_nodes(nodes: Sequence[BaseNode], all_nodes: Sequence[BaseNode]) -> List[BaseNode]:
    """The nodes of ``all_nodes`` that are children (CHILD relationship) of any of ``nodes``,
    in the order of ``all_nodes``."""
    ids = set()
    for n in nodes:
        for info in n.child_nodes or []:
            ids.add(info.node_id)
    return [n for n in all_nodes if n.node_id in ids]


def get_deeper_nodes(nodes: Sequence[BaseNode], depth: int = 1) -> List[BaseNode]:
    """The nodes ``depth`` levels below the roots of ``nodes`` (``depth=0``: the roots).

    Raises:
        ValueError: ``depth`` < 0.
    """
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    level = get_root_nodes(nodes)
    for _ in range(depth):
        level = get_child_nodes(level, nodes)
    return level


def scaled_overlap(chunk_overlap: int, chunk_size: int) -> int:
    """The overlap used at a level of ``chunk_size`` tokens: ``chunk_overlap``, but at most
    half the level's size (so ``[2048, 512, 128]`` with overlap 200 stays valid at 128)."""
    return max(0, min(int(chunk_overlap), int(chunk_size) // 2))


class HierarchicalNodeParser(NodeParser):
    """Split documents into a tree of chunks, one level per parser (largest first).

    Level 0 splits the document; level ``k + 1`` splits each level-``k`` node.  Every node
    gets SOURCE → the document, children get PARENT → their parent and parents CHILD →
    their children (lists of :class:`~ragloom.schema.RelatedNodeInfo`).  Output per
    document: all level-0 nodes, then all level-1 nodes, … (LlamaIndex's order).

    With span-engine parsers (the default ``SentenceSplitter`` per level), each level
    covers its parent exactly: every child span lies inside its parent's span, every
    offset is a character offset into the original document
    (``doc.text[n.start_char_idx:n.end_char_idx] == n.text``), and every non-whitespace
    character of a parent is in one of its children.  Each level's chunks are within its
    ``chunk_size`` tokens (metadata that is embedded included).  Note: root chunks larger
    than the embed model's limit are normal here — typically only leaves are embedded.

    Build with :meth:`from_defaults` (``chunk_sizes``) or with LlamaIndex's
    ``node_parser_ids`` + ``node_parser_map`` (any :class:`NodeParser` per level; offsets
    of non-span parsers are located in the parent text with a cursor).

    Raises:
        ValueError: empty ``chunk_sizes``/``node_parser_ids``, a size ≤ 0, a negative
            overlap, or an id missing from ``node_parser_map``.
    """

    def __init__(
        self,
        chunk_sizes: Optional[List[int]] = None,
        node_parser_ids: Optional[List[str]] = None,
        node_parser_map: Optional[Dict[str, NodeParser]] = None,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: Any = None,
        id_func: Optional[IdFuncCallable] = None,
        tokenizer: Any = None,
    ) -> None:
        self.include_metadata = include_metadata
        self.include_prev_next_rel = include_prev_next_rel
        self.id_func = id_func
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        if chunk_overlap is None or int(chunk_overlap) < 0:
            raise ValueError(f"chunk_overlap must be >= 0, got chunk_overlap={chunk_overlap}")
        self.chunk_overlap = int(chunk_overlap)
        if node_parser_ids is None:
            from ragloom.node_parser.text.sentence import SentenceSplitter

            sizes = list(DEFAULT_CHUNK_SIZES if chunk_sizes is None else chunk_sizes)
            if not sizes:
                raise ValueError("chunk_sizes must not be empty")
            for cs in sizes:
                if not isinstance(cs, int) or isinstance(cs, bool) or cs <= 0:
                    raise ValueError(f"chunk sizes must be ints > 0, got {sizes}")
            ids = [f"chunk_size_{cs}" for cs in sizes]
            if len(set(ids)) != len(ids):
                ids = [f"chunk_size_{cs}_level_{i}" for i, cs in enumerate(sizes)]
            node_parser_map = {}
            for pid, cs in zip(ids, sizes, strict=True):
                overlap = scaled_overlap(self.chunk_overlap, cs)
                if overlap != self.chunk_overlap:
                    logger.debug(
                        "chunk_overlap %d scaled to %d for the %d-token level", self.chunk_overlap, overlap, cs
                    )
                node_parser_map[pid] = SentenceSplitter(
                    chunk_size=cs,
                    chunk_overlap=overlap,
                    tokenizer=tokenizer,
                    include_metadata=include_metadata,
                    include_prev_next_rel=include_prev_next_rel,
                    id_func=id_func,
                )
            node_parser_ids = ids
            self.chunk_sizes: Optional[List[int]] = sizes
        else:
            if chunk_sizes is not None:
                raise ValueError("give either chunk_sizes or node_parser_ids, not both")
            if not node_parser_ids:
                raise ValueError("node_parser_ids must not be empty")
            node_parser_map = dict(node_parser_map or {})
            missing = [p for p in node_parser_ids if p not in node_parser_map]
            if missing:
                raise ValueError(f"node_parser_ids {missing} are not in node_parser_map")
            self.chunk_sizes = None
        self.node_parser_ids: List[str] = list(node_parser_ids)
        self.node_parser_map: Dict[str, NodeParser] = node_parser_map

    @classmethod
    def from_defaults(
        cls,
        chunk_sizes: Optional[List[int]] = None,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        node_parser_ids: Optional[List[str]] = None,
        node_parser_map: Optional[Dict[str, NodeParser]] = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: Any = None,
        id_func: Optional[IdFuncCallable] = None,
        tokenizer: Any = None,
    ) -> "HierarchicalNodeParser":
        """``chunk_sizes`` (tokens per level, largest first; default ``[2048, 512, 128]``)
        with one ``SentenceSplitter`` per level, ``chunk_overlap`` tokens (scaled down to at
        most half of a small level's size, never an error), measured in ``tokenizer``
        (default ``Settings.tokenizer``).  Or LlamaIndex's ``node_parser_ids`` +
        ``node_parser_map``."""
        if node_parser_ids is not None and chunk_sizes is None:
            return cls(
                node_parser_ids=node_parser_ids,
                node_parser_map=node_parser_map,
                chunk_overlap=chunk_overlap,
                include_metadata=include_metadata,
                include_prev_next_rel=include_prev_next_rel,
                id_func=id_func,
                tokenizer=tokenizer,
            )
        return cls(
            chunk_sizes=chunk_sizes,
            chunk_overlap=chunk_overlap,
            include_metadata=include_metadata,
            include_prev_next_rel=include_prev_next_rel,
            id_func=id_func,
            tokenizer=tokenizer,
        )

    def to_config(self) -> Dict[str, Any]:
        return {
            "class_name": self.class_name(),
            "node_parser_ids": self.node_parser_ids,
            "levels": [self.node_parser_map[p].to_config() for p in self.node_parser_ids],
        }

    # -- parsing ---------------------------------------------------------------------
    def _children(self, parser: NodeParser, parents: List[BaseNode], doc: BaseNode) -> List[BaseNode]:
        """Split ``parents`` with ``parser``; fix offsets (into the document) and relationships."""
        children = parser.get_nodes_from_documents(parents)
        by_id = {p.node_id: p for p in parents}
        span_based = isinstance(parser, MetadataAwareTextSplitter)
        doc_src: Optional[RelatedNodeInfo] = None
        infos: Dict[str, RelatedNodeInfo] = {}
        kids: Dict[str, List[BaseNode]] = {}
        cursors: Dict[str, int] = {}
        for child in children:
            src = child.source_node
            parent = by_id.get(src.node_id) if src is not None else None
            if parent is None:  # a parser that does not set SOURCE: assume order
                parent = parents[0] if len(parents) == 1 else None
            if parent is None:
                raise ValueError(f"{type(parser).__name__} returned a node without SOURCE to its parent")
            ptext = parent.get_content(MetadataMode.NONE)
            pstart = getattr(parent, "start_char_idx", None)
            a = getattr(child, "start_char_idx", None)
            b = getattr(child, "end_char_idx", None)
            ctext = child.get_content(MetadataMode.NONE)
            if not (span_based and a is not None and b is not None and ptext[a:b] == ctext):
                core = ctext.strip()
                i = ptext.find(core, cursors.get(parent.node_id, 0)) if core else -1
                if i < 0 and core:
                    i = ptext.find(core)
                a, b = (i, i + len(core)) if i >= 0 else (None, None)
                if a is not None:
                    cursors[parent.node_id] = a + 1
            if hasattr(child, "start_char_idx"):
                if a is not None and pstart is not None:
                    child.start_char_idx, child.end_char_idx = pstart + a, pstart + b
                else:
                    child.start_char_idx = child.end_char_idx = None
            pinfo = infos.get(parent.node_id)
            if pinfo is None:
                pinfo = infos[parent.node_id] = parent.as_related_node_info()
            src_info = parent.source_node
            if src_info is None:
                if doc_src is None:
                    doc_src = doc.as_related_node_info()
                src_info = doc_src
            child.relationships[NodeRelationship.SOURCE] = src_info
            child.relationships[NodeRelationship.PARENT] = pinfo
            kids.setdefault(parent.node_id, []).append(child)
        for pid, lst in kids.items():
            by_id[pid].relationships[NodeRelationship.CHILD] = [c.as_related_node_info() for c in lst]
        return children

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        """All levels' nodes of every document (per document: level 0, then 1, …)."""
        out: List[BaseNode] = []
        docs: Sequence[BaseNode] = documents
        bar = None
        if show_progress:
            from tqdm.auto import tqdm

            docs = bar = tqdm(documents, desc="Parsing documents into nodes")
        for doc in docs:
            level = self.node_parser_map[self.node_parser_ids[0]].get_nodes_from_documents([doc])
            out.extend(level)
            for pid in self.node_parser_ids[1:]:
                if not level:
                    break
                level = self._children(self.node_parser_map[pid], level, doc)
                out.extend(level)
        if bar is not None:
            bar.close()
        return out
