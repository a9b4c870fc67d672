"""Graph store protocols and the property-graph value types (LlamaIndex's ``graph_stores.types``).

Two kinds of store, as in LlamaIndex:

* a **triplet store** (:class:`GraphStore`, used by
  :class:`~ragloom.indices.knowledge_graph.KnowledgeGraphIndex`): ``(subject, relation, object)``
  strings;
* a **property graph store** (:class:`PropertyGraphStore`, used by
  :class:`~ragloom.indices.property_graph.PropertyGraphIndex`): :class:`EntityNode` entities with a
  label and properties, joined by :class:`Relation` edges.

ragloom's implementations (:class:`~ragloom.graph_stores.SimpleGraphStore`,
:class:`~ragloom.graph_stores.SimplePropertyGraphStore`) keep their data in tables of the same SQLite
database as the docstore and the vector store, so a document's nodes and the triplets extracted from
them commit in one transaction.  Beyond LlamaIndex's methods, the protocols declare what the indexes
use to stay incremental: every triplet records the node it was extracted from (its *source*), and
:meth:`GraphStore.delete_sources` removes what only those nodes supported.

**Entity matching.**  Names are compared by a *key*: Unicode NFKC, case-folded, inner whitespace
collapsed (:func:`entity_key`).  ``"New York"``, ``"new  york"`` and ``"ＮＥＷ York"`` are one entity,
kept under the first spelling written.  (LlamaIndex capitalises every name instead —
``"New york"`` — and then compares exactly.)
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import msgspec

__all__ = [
    "GraphStore",
    "PropertyGraphStore",
    "LabelledNode",
    "EntityNode",
    "Relation",
    "Triplet",
    "entity_key",
    "KG_NODES_KEY",
    "KG_RELATIONS_KEY",
    "KG_SOURCE_REL",
    "TRIPLET_SOURCE_KEY",
    "DEFAULT_PERSIST_FNAME",
]

#: LlamaIndex's names (metadata keys an extractor fills, the property naming a triplet's source node)
KG_NODES_KEY = "nodes"
KG_RELATIONS_KEY = "relations"
KG_SOURCE_REL = "SOURCE"
TRIPLET_SOURCE_KEY = "triplet_source_id"
#: file name a graph store that does not live in the shared database persists to
DEFAULT_PERSIST_FNAME = "graph_store.json"

_SPACES = re.compile(r"\s+")


def entity_key(name: str) -> str:
    """The key entity names are matched by: NFKC, case-folded, whitespace runs collapsed to one
    space and stripped.  ``entity_key("  New\\tYork ") == entity_key("new york")``."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()


class GraphStore(ABC):
    """A store of ``(subject, relation, object)`` triplets (LlamaIndex's ``GraphStore``).

    The LlamaIndex methods are :meth:`get`, :meth:`get_rel_map`, :meth:`upsert_triplet`,
    :meth:`delete`, :meth:`persist`, :meth:`get_schema` and :meth:`query`; the others are what
    ragloom's :class:`~ragloom.indices.knowledge_graph.KnowledgeGraphIndex` also calls.
    """

    schema: str = ""

    @property
    def client(self) -> Any:
        """The underlying client (``None`` when not applicable)."""
        return None

    @abstractmethod
    def get(self, subj: str) -> List[List[str]]:
        """``[[relation, object], ...]`` of the triplets whose subject matches ``subj``."""

    @abstractmethod
    def get_rel_map(
        self, subjs: Optional[List[str]] = None, depth: int = 2, limit: int = 30
    ) -> Dict[str, List[List[str]]]:
        """Paths of up to ``depth`` hops from each subject: ``{subj: [[s, r, o], ...]}``."""

    @abstractmethod
    def upsert_triplet(self, subj: str, rel: str, obj: str) -> None:
        """Add one triplet (no-op when present)."""

    @abstractmethod
    def delete(self, subj: str, rel: str, obj: str) -> None:
        """Remove one triplet, whatever its sources."""

    @abstractmethod
    def upsert_triplets(self, triplets: Iterable[Tuple[str, str, str]], source_id: str = "") -> None:
        """Add ``triplets`` supported by node ``source_id`` (``""``: added by hand, kept until deleted)."""

    @abstractmethod
    def delete_sources(self, source_ids: Sequence[str]) -> None:
        """Forget that nodes ``source_ids`` support their triplets; a triplet left with no source goes."""

    @abstractmethod
    def get_all_triplets(self) -> List[Tuple[str, str, str]]:
        """Every triplet once, in the order first written."""

    @abstractmethod
    def triplets_of_source(self, source_id: str) -> List[Tuple[str, str, str]]:
        """The triplets node ``source_id`` supports, in the order written."""

    @abstractmethod
    def missing_embeddings(self, model: str) -> List[Tuple[str, str, str]]:
        """Triplets without a vector of embed model ``model``."""

    @abstractmethod
    def set_embeddings(self, model: str, items: Sequence[Tuple[Tuple[str, str, str], Sequence[float]]]) -> None:
        """Store ``(triplet, vector)`` pairs of embed model ``model``."""

    @abstractmethod
    def query_embeddings(
        self, model: str, query_embedding: Sequence[float], top_k: int
    ) -> List[Tuple[Tuple[str, str, str], float]]:
        """The ``top_k`` triplets closest to ``query_embedding`` (cosine), best first, with the similarity."""

    @abstractmethod
    def persist(self, persist_path: str, fs: Any = None) -> None:
        """Make the store durable at ``persist_path``."""

    def get_schema(self, refresh: bool = False) -> str:
        """The graph's schema (not supported by the simple stores)."""
        raise NotImplementedError(f"{type(self).__name__} has no schema")

    def query(self, query: str, param_map: Optional[Dict[str, Any]] = None) -> Any:
        """A query in the store's own language (not supported by the simple stores)."""
        raise NotImplementedError(f"{type(self).__name__} does not run queries")


# -- property graph values ------------------------------------------------------------------------
class LabelledNode(msgspec.Struct, kw_only=True):
    """A node of a property graph: a ``label`` and ``properties`` (LlamaIndex's ``LabelledNode``)."""

    label: str = "node"
    properties: Dict[str, Any] = {}
    embedding: Optional[List[float]] = None

    @property
    def id(self) -> str:  # noqa: A003 - LlamaIndex's name
        raise NotImplementedError


class EntityNode(LabelledNode, kw_only=True):
    """A named entity (LlamaIndex's ``EntityNode``); its ``id`` is its ``name``, ``str()`` too."""

    name: str
    label: str = "entity"

    @property
    def id(self) -> str:  # noqa: A003
        return self.name.replace('"', " ")

    def __str__(self) -> str:
        return self.name


class Relation(msgspec.Struct, kw_only=True):
    """An edge ``source_id -[label]-> target_id`` between entities, with ``properties``
    (LlamaIndex's ``Relation``; ``str()`` and ``id`` are the label)."""

    label: str
    source_id: str
    target_id: str
    properties: Dict[str, Any] = {}

    @property
    def id(self) -> str:  # noqa: A003
        return self.label

    def __str__(self) -> str:
        return self.label


#: ``(subject entity, relation, object entity)``
Triplet = Tuple[LabelledNode, Relation, LabelledNode]


class PropertyGraphStore(ABC):
    """A labelled property graph (the part of LlamaIndex's ``PropertyGraphStore`` ragloom implements).

    ``supports_vector_queries``: entity embeddings are kept and searched by :meth:`vector_query`.
    Not declared (LlamaIndex has them): ``structured_query`` (Cypher), ``get_schema_str``,
    ``upsert_llama_nodes`` (ragloom keeps the text chunks in the docstore, written by the ingestion
    engine).
    """

    supports_structured_queries: bool = False
    supports_vector_queries: bool = False

    @abstractmethod
    def get(self, properties: Optional[dict] = None, ids: Optional[List[str]] = None) -> List[LabelledNode]:
        """Entities with one of ``ids`` (names, matched by :func:`entity_key`) and/or these ``properties``."""

    @abstractmethod
    def get_triplets(
        self,
        entity_names: Optional[List[str]] = None,
        relation_names: Optional[List[str]] = None,
        properties: Optional[dict] = None,
        ids: Optional[List[str]] = None,
    ) -> List[Triplet]:
        """Triplets touching those entities (as subject or object), with those relation labels or properties."""

    @abstractmethod
    def get_rel_map(
        self, graph_nodes: List[LabelledNode], depth: int = 2, limit: int = 30, ignore_rels: Optional[List[str]] = None
    ) -> List[Triplet]:
        """Triplets within ``depth`` hops of ``graph_nodes`` (either direction), at most ``limit``."""

    @abstractmethod
    def upsert_nodes(self, nodes: Sequence[LabelledNode]) -> None:
        """Add or update entities (properties merged, embeddings replaced when given)."""

    @abstractmethod
    def upsert_relations(self, relations: Sequence[Relation]) -> None:
        """Add relations (their ``TRIPLET_SOURCE_KEY`` property names the node they came from)."""

    @abstractmethod
    def delete(
        self,
        entity_names: Optional[List[str]] = None,
        relation_names: Optional[List[str]] = None,
        properties: Optional[dict] = None,
        ids: Optional[List[str]] = None,
    ) -> None:
        """Remove matching entities (with their relations) and relations."""

    @abstractmethod
    def delete_sources(self, source_ids: Sequence[str]) -> None:
        """Remove the relations extracted from nodes ``source_ids``, and entities nothing else uses."""

    @abstractmethod
    def get_llama_nodes(self, node_ids: List[str]) -> List[Any]:
        """The text chunks (:class:`~ragloom.schema.BaseNode`) with these ids."""

    @abstractmethod
    def set_node_source(self, source: Optional[Callable[[List[str]], List[Any]]]) -> None:
        """Where :meth:`get_llama_nodes` reads chunks (the index's docstore)."""

    @abstractmethod
    def entities_without_embedding(self) -> List[EntityNode]:
        """Entities that have no vector yet."""

    @abstractmethod
    def clear_embeddings(self) -> None:
        """Forget every entity vector (the embed model changed)."""

    def vector_query(self, query: Any, **kwargs: Any) -> Tuple[List[LabelledNode], List[float]]:
        """Entities closest to ``query.query_embedding`` and their cosine similarities."""
        raise NotImplementedError(f"{type(self).__name__} does not keep vectors")

    @abstractmethod
    def persist(self, persist_path: str, fs: Any = None) -> None:
        """Make the store durable at ``persist_path``."""

    def structured_query(self, query: str, param_map: Optional[Dict[str, Any]] = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not run structured (Cypher) queries")
