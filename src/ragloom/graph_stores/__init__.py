"""Graph stores (LlamaIndex's ``llama_index.core.graph_stores``), kept in the shared SQLite database.

* :class:`SimpleGraphStore`: ``(subject, relation, object)`` triplets, for
  :class:`~ragloom.indices.knowledge_graph.KnowledgeGraphIndex`;
* :class:`SimplePropertyGraphStore`: entities with labels and properties joined by relations, for
  :class:`~ragloom.indices.property_graph.PropertyGraphIndex`.

A :class:`~ragloom.storage.StorageContext` makes them on first use (``storage_context.graph_store``,
``storage_context.property_graph_store``) on its own database, so the triplets extracted from a
document commit in the same transaction as its nodes and persist with them.
"""

from ragloom.graph_stores.simple import SimpleGraphStore
from ragloom.graph_stores.simple_labelled import SimplePropertyGraphStore
from ragloom.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    KG_SOURCE_REL,
    TRIPLET_SOURCE_KEY,
    EntityNode,
    GraphStore,
    LabelledNode,
    PropertyGraphStore,
    Relation,
    Triplet,
    entity_key,
)

__all__ = [
    "GraphStore",
    "SimpleGraphStore",
    "PropertyGraphStore",
    "SimplePropertyGraphStore",
    "LabelledNode",
    "EntityNode",
    "Relation",
    "Triplet",
    "entity_key",
    "KG_NODES_KEY",
    "KG_RELATIONS_KEY",
    "KG_SOURCE_REL",
    "TRIPLET_SOURCE_KEY",
]
