"""Relational node parsers: nodes linked by PARENT/CHILD relationships."""

from ragloom.node_parser.relational.hierarchical import (
    HierarchicalNodeParser,
    get_child_nodes,
    get_deeper_nodes,
    get_leaf_nodes,
    get_root_nodes,
)

__all__ = [
    "HierarchicalNodeParser",
    "get_leaf_nodes",
    "get_root_nodes",
    "get_child_nodes",
    "get_deeper_nodes",
]
