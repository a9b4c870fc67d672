"""The index store protocol (LlamaIndex's ``BaseIndexStore``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ragloom.data_structs import IndexStruct

__all__ = ["BaseIndexStore", "DEFAULT_PERSIST_FNAME"]

DEFAULT_PERSIST_FNAME = "index_store.json"


class BaseIndexStore(ABC):
    """Index structs (one per index in a storage context) by ``index_id``."""

    @abstractmethod
    def index_structs(self) -> List[IndexStruct]: ...

    @abstractmethod
    def add_index_struct(self, index_struct: IndexStruct) -> None: ...

    @abstractmethod
    def delete_index_struct(self, key: str) -> None: ...

    @abstractmethod
    def get_index_struct(self, struct_id: Optional[str] = None) -> Optional[IndexStruct]: ...

    def persist(self, persist_path: str = "", fs: Any = None) -> None:
        return None

    # -- records of docstore-backed indexes (ragloom.indices.base.BaseIndex) ---------------------
    # Per index: the fingerprint of each source document it ingested, the nodes it holds (in
    # insertion order, each with its source document) and key -> node postings (keyword tables).
    # Kept out of the index struct's JSON so that a write costs O(batch), not O(index).  A store
    # without them (these defaults) can hold VectorStoreIndex structs only.
    def _no_records(self) -> NotImplementedError:
        return NotImplementedError(
            f"{type(self).__name__} cannot hold the records of docstore-backed indexes "
            "(SummaryIndex, KeywordTableIndex, ...); use the default SQLiteIndexStore"
        )

    def rename_index(self, old_id: str, new_id: str) -> None:
        """Move the records of index ``old_id`` to ``new_id`` (the caller re-stores the struct).

        Raises:
            ValueError: ``new_id`` already has records.
        """
        raise self._no_records()

    def get_source_hashes(self, index_id: str) -> Dict[str, str]:
        """``{source document id: fingerprint}`` recorded for index ``index_id``."""
        raise self._no_records()

    def get_source_hash(self, index_id: str, ref_doc_id: str) -> Optional[str]:
        """The fingerprint index ``index_id`` recorded for source ``ref_doc_id``, or ``None``."""
        raise self._no_records()

    def set_source_hashes(self, index_id: str, hashes: Dict[str, str]) -> None:
        """Record ``{source document id: fingerprint}`` for index ``index_id`` (replacing older ones)."""
        raise self._no_records()

    def delete_source_hash(self, index_id: str, ref_doc_id: str) -> None:
        """Forget the fingerprint of ``ref_doc_id`` in index ``index_id`` (no error if absent)."""
        raise self._no_records()

    def add_index_nodes(self, index_id: str, nodes: Sequence[Tuple[str, str]]) -> None:
        """Append ``(node id, source document id)`` pairs to index ``index_id``'s nodes, in order; a
        node it already holds keeps its place."""
        raise self._no_records()

    def get_index_node_ids(self, index_id: str, ref_doc_id: Optional[str] = None) -> List[str]:
        """Node ids of index ``index_id`` (of source ``ref_doc_id`` only, when given), in insertion order."""
        raise self._no_records()

    def get_index_node_refs(self, index_id: str) -> Dict[str, List[str]]:
        """``{source document id: node ids}`` of index ``index_id``, node ids in insertion order."""
        raise self._no_records()

    def count_index_nodes(self, index_id: str) -> int:
        """How many nodes index ``index_id`` holds."""
        raise self._no_records()

    def delete_index_nodes(self, index_id: str, node_ids: Sequence[str]) -> None:
        """Remove ``node_ids`` (and their postings) from index ``index_id``."""
        raise self._no_records()

    def nodes_held_elsewhere(self, index_id: Optional[str], node_ids: Sequence[str]) -> Set[str]:
        """The ids among ``node_ids`` that an index other than ``index_id`` (any index: ``None``) holds;
        none in a store without records."""
        return set()

    def add_postings(self, index_id: str, postings: Iterable[Tuple[str, str]]) -> None:
        """Add ``(key, node id)`` postings to index ``index_id`` (duplicates are ignored)."""
        raise self._no_records()

    def get_postings(self, index_id: str, keys: Sequence[str]) -> Dict[str, List[str]]:
        """``{key: node ids}`` for the ``keys`` index ``index_id`` has postings for (absent keys are left
        out; node ids sorted)."""
        raise self._no_records()

    def get_all_postings(self, index_id: str) -> Dict[str, Set[str]]:
        """Every ``{key: node ids}`` of index ``index_id``."""
        raise self._no_records()

    def get_node_postings(self, index_id: str, node_ids: Sequence[str]) -> Dict[str, List[str]]:
        """``{node id: keys}`` of the postings index ``index_id`` has for ``node_ids`` (the reverse of
        :meth:`get_postings`; node ids without postings are left out; keys sorted)."""
        raise self._no_records()

    async def async_add_index_struct(self, index_struct: IndexStruct) -> None:
        self.add_index_struct(index_struct)

    async def aget_index_struct(self, struct_id: Optional[str] = None) -> Optional[IndexStruct]:
        return self.get_index_struct(struct_id)
