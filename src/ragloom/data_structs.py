"""Index structs: the small records an index store keeps per index (LlamaIndex's ``IndexDict``)."""

from __future__ import annotations

import uuid
from typing import Dict, Optional, Union

import msgspec


def _new_id() -> str:
    return str(uuid.uuid4())


class IndexStruct(msgspec.Struct, kw_only=True, tag_field="type"):
    """Base of index structs: ``index_id`` names the index inside a storage context."""

    index_id: str = msgspec.field(default_factory=_new_id)
    summary: Optional[str] = None

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode("utf-8")

    @staticmethod
    def from_json(data: Union[str, bytes]) -> "IndexStruct":
        return msgspec.json.decode(data, type=Union[IndexDict])  # type: ignore[valid-type]


class IndexDict(IndexStruct, kw_only=True, tag="vector_store"):
    """Struct of a :class:`~ragloom.indices.VectorStoreIndex`.

    ``nodes_dict`` maps vector-store ids to node ids; it is left empty when the
    vector store keeps the node text itself (``stores_text``), as with the default store.
    ``embed_model`` records the embedding model's identity (name and dimension) so a
    loaded index refuses to be queried with an incompatible model.
    """

    nodes_dict: Dict[str, str] = {}
    embed_model: Dict[str, object] = {}
    #: configuration of the node parser that made the stored nodes (set by ``ragloom index``,
    #: which re-chunks every document when it changes)
    node_parser: Dict[str, object] = {}

    def add_node(self, node_id: str, text_id: Optional[str] = None) -> str:
        vector_id = text_id or node_id
        self.nodes_dict[vector_id] = node_id
        return vector_id

    def delete(self, doc_id: str) -> None:
        self.nodes_dict.pop(doc_id, None)
