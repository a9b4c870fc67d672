"""The shape of a :class:`~ragloom.indices.tree.TreeIndex`: roots, children and summary texts.

Pure data and structure operations (no model calls); :mod:`ragloom.indices.tree.builder` fills in
the summaries.

**Summary ids are a Merkle hash.**  A summary node's id is a hash of its children's ids
(:func:`summary_id`), and leaf ids are content-addressed by the node parsers, so an id names the
exact subtree below it.  A summary whose children changed (a leaf left, a leaf arrived, a child was
re-summarised) no longer matches its id: it is *stale* (:meth:`TreeShape.stale`), and that is all
the bookkeeping an update needs — nothing else has to remember what to redo, and a half-finished
update (a crash between writing the leaves and writing the summaries) is found again by the next
one.  A summary whose children are unchanged keeps its id and its text, so it is never asked for
again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set

__all__ = ["TreeShape", "summary_id"]


def summary_id(children: Iterable[str]) -> str:
    """The id of a summary node over ``children`` (ids, in order): sha256 of them, UUID-shaped
    like the parsers' node ids."""
    h = hashlib.sha256(b"ragloom.tree.summary")
    for child in children:
        h.update(b"\x00")
        h.update(child.encode("utf-8", "surrogatepass"))
    x = h.hexdigest()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}"


@dataclass
class TreeShape:
    """A tree over leaf node ids: ``roots`` (top level, in order), ``children`` (summary id → child
    ids, in order; leaves have no entry) and ``texts`` (summary id → summary text)."""

    roots: List[str] = field(default_factory=list)
    children: Dict[str, List[str]] = field(default_factory=dict)
    texts: Dict[str, str] = field(default_factory=dict)

    # -- reading ---------------------------------------------------------------------------------
    def is_summary(self, node_id: str) -> bool:
        return node_id in self.children

    @property
    def empty(self) -> bool:
        return not self.roots

    def kids(self, parent: Optional[str]) -> List[str]:
        """The children of ``parent`` (``None``: the roots), the list itself (mutations show)."""
        return self.roots if parent is None else self.children[parent]

    def walk(self) -> List[str]:
        """Every node id, depth first, parents before children, in order."""
        out: List[str] = []
        stack = list(reversed(self.roots))
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(self.children.get(node, [])))
        return out

    def leaves(self) -> List[str]:
        """The leaf ids in tree order (left to right)."""
        return [n for n in self.walk() if n not in self.children]

    def parents(self) -> Dict[str, Optional[str]]:
        """``{node id: parent id}`` (``None`` for roots)."""
        out: Dict[str, Optional[str]] = {r: None for r in self.roots}
        for parent, kids in self.children.items():
            for kid in kids:
                out[kid] = parent
        return out

    def depths(self) -> Dict[str, int]:
        """``{node id: depth}``, roots at 0."""
        out: Dict[str, int] = {}
        level = list(self.roots)
        depth = 0
        while level:
            nxt: List[str] = []
            for node in level:
                out[node] = depth
                nxt.extend(self.children.get(node, []))
            level = nxt
            depth += 1
        return out

    def stale(self) -> List[str]:
        """Summaries whose children changed since they were written (their id no longer matches)."""
        return [s for s, kids in self.children.items() if s != summary_id(kids)]

    # -- changing ------------------------------------------------------------------------------------
    def add_summary(self, kids: List[str], text: str) -> str:
        """Record a summary over ``kids`` with ``text``; returns its id (it is not attached anywhere)."""
        sid = summary_id(kids)
        self.children[sid] = list(kids)
        self.texts[sid] = text
        return sid

    def rename(self, old: str, new: str, parent: Optional[str]) -> None:
        """Give summary ``old`` (child of ``parent``) the id ``new``, keeping its children and place."""
        if old == new:
            return
        self.children[new] = self.children.pop(old)
        self.texts[new] = self.texts.pop(old, "")
        siblings = self.kids(parent)
        siblings[siblings.index(old)] = new

    def remove(self, node_ids: Iterable[str]) -> Set[str]:
        """Detach ``node_ids`` (with the subtrees of summaries among them) from the tree; a summary
        left with no child goes too.  Returns the summary ids removed.  Unknown ids are ignored."""
        parents = self.parents()
        removed: Set[str] = set()

        def drop_subtree(node: str) -> None:
            if node in self.children:
                removed.add(node)
                self.texts.pop(node, None)
                for kid in self.children.pop(node):
                    parents.pop(kid, None)
                    drop_subtree(kid)

        def drop(node: str) -> None:
            if node not in parents:
                return
            parent = parents.pop(node)
            self.kids(parent).remove(node)
            drop_subtree(node)
            if parent is not None and not self.children[parent]:
                drop(parent)

        for node_id in list(node_ids):
            drop(node_id)
        return removed
