"""``BasePGRetriever``: the base of the property-graph sub-retrievers (LlamaIndex's)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Dict, List, Optional, Sequence, Union

from ragloom.graph_stores.types import TRIPLET_SOURCE_KEY, Triplet
from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

__all__ = ["BasePGRetriever", "DEFAULT_PREAMBLE"]

#: what precedes the facts put in front of a chunk's text (``include_text``)
DEFAULT_PREAMBLE = "Facts from the knowledge graph about this text:\n\n"


class BasePGRetriever(BaseRetriever):
    """Retrieves triplets from a property graph store; with ``include_text``, returns the chunks they
    were extracted from instead, each with its facts in front (``include_text_preamble``).

    A triplet becomes a ``TextNode`` ``"subject -> relation -> object"`` whose SOURCE is the chunk it
    came from.  With ``include_text`` each chunk is returned once (LlamaIndex returns it once per
    triplet and lets ``PGRetriever`` drop the repeats), with the best score of its triplets; chunks
    the docstore no longer has are left out.

    Args:
        graph_store: a :class:`~ragloom.graph_stores.types.PropertyGraphStore`.
        include_text: return source chunks instead of bare triplets (default ``True``).
        include_text_preamble: default :data:`DEFAULT_PREAMBLE`.
        callback_manager: accepted for LlamaIndex compatibility.
    """

    def __init__(self, graph_store: Any, include_text: bool = True, include_text_preamble: Optional[str] = None,
                 callback_manager: Any = None) -> None:
        self._graph_store = graph_store
        self.include_text = bool(include_text)
        self._include_text_preamble = include_text_preamble if include_text_preamble is not None else DEFAULT_PREAMBLE
        self.callback_manager = callback_manager

    def _get_nodes_with_score(self, triplets: Sequence[Triplet], scores: Optional[Sequence[float]] = None
                              ) -> List[NodeWithScore]:
        out = []
        for i, (subj, rel, obj) in enumerate(triplets):
            source = rel.properties.get(TRIPLET_SOURCE_KEY) or subj.properties.get(TRIPLET_SOURCE_KEY)
            relationships: Dict[NodeRelationship, Union[RelatedNodeInfo, List[RelatedNodeInfo]]] = {}
            if source:
                relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=str(source))
            node = TextNode(text=f"{subj} -> {rel} -> {obj}", relationships=relationships)
            out.append(NodeWithScore(node=node, score=1.0 if scores is None else float(scores[i])))
        return out

    def add_source_text(self, nodes: List[NodeWithScore]) -> List[NodeWithScore]:
        """One node per source chunk of ``nodes``: the chunk with its facts in front, best score first
        kept in order of first appearance."""
        if not self.include_text:
            return nodes
        facts: Dict[str, List[str]] = {}
        best: Dict[str, float] = {}
        for n in nodes:
            source = n.node.ref_doc_id
            if source is None:
                continue
            facts.setdefault(source, []).append(n.node.get_content())
            best[source] = max(best.get(source, float("-inf")), n.score if n.score is not None else 0.0)
        chunks = {c.node_id: c for c in self._graph_store.get_llama_nodes(list(facts))}
        out = []
        for source, lines in facts.items():
            chunk = chunks.get(source)
            if chunk is None:
                continue
            node = chunk.copy()
            node.set_content(self._include_text_preamble + "\n".join(lines) + "\n\n" + chunk.get_content())
            out.append(NodeWithScore(node=node, score=best[source]))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        nodes = self.retrieve_from_graph(query_bundle)
        return self.add_source_text(nodes) if self.include_text else nodes

    @abstractmethod
    def retrieve_from_graph(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        """Triplet nodes for the query (see :meth:`_get_nodes_with_score`)."""
