"""The document store protocol (LlamaIndex's ``BaseDocumentStore``) and ``RefDocInfo``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from ragloom.schema import BaseNode

__all__ = ["BaseDocumentStore", "RefDocInfo", "RefDocSummary", "DEFAULT_PERSIST_FNAME"]

DEFAULT_PERSIST_FNAME = "docstore.json"


@dataclass
class RefDocInfo:
    """What the docstore knows about one source document: its nodes' ids and its metadata."""

    node_ids: List[str] = field(default_factory=list)
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"node_ids": list(self.node_ids), "metadata": dict(self.metadata)}


@dataclass
class RefDocSummary:
    """One source document as :meth:`BaseDocumentStore.list_ref_docs` lists it: its id, metadata,
    number of nodes, recorded fingerprint, and when its nodes were last written (seconds since the
    epoch, ``None`` if unknown)."""

    ref_doc_id: str
    metadata: Dict[str, Any]
    node_count: int
    doc_hash: Optional[str] = None
    indexed_at: Optional[float] = None


class BaseDocumentStore(ABC):
    """Nodes and documents by id, per-document hashes and each source document's node list."""

    #: see :meth:`set_node_source`
    _node_source: Optional[Callable[[List[str]], List[BaseNode]]] = None
    #: see :meth:`set_node_guard`
    _node_guard: Optional[Callable[[List[str]], Set[str]]] = None

    # -- nodes ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def docs(self) -> Dict[str, BaseNode]:
        """Every stored node/document by id (LlamaIndex's semantics: nodes recorded by link only
        are read from the node source, see :meth:`set_node_source`).  This loads every node; for a
        large store read them by id with :meth:`get_node` / :meth:`get_nodes`."""

    @abstractmethod
    def add_documents(
        self,
        nodes: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: Optional[int] = None,
        store_text: bool = True,
    ) -> None: ...

    @abstractmethod
    def get_document(self, doc_id: str, raise_error: bool = True) -> Optional[BaseNode]: ...

    @abstractmethod
    def delete_document(self, doc_id: str, raise_error: bool = True) -> None: ...

    @abstractmethod
    def document_exists(self, doc_id: str) -> bool: ...

    # -- source documents --------------------------------------------------------------
    @abstractmethod
    def get_ref_doc_info(self, ref_doc_id: str) -> Optional[RefDocInfo]: ...

    @abstractmethod
    def get_all_ref_doc_info(self) -> Optional[Dict[str, RefDocInfo]]: ...

    @abstractmethod
    def delete_ref_doc(self, ref_doc_id: str, raise_error: bool = True) -> None: ...

    def ref_doc_exists(self, ref_doc_id: str) -> bool:
        return self.get_ref_doc_info(ref_doc_id) is not None

    # -- hashes ---------------------------------------------------------------------------
    @abstractmethod
    def set_document_hash(self, doc_id: str, doc_hash: str) -> None: ...

    def set_document_hashes(self, doc_hashes: Dict[str, str]) -> None:
        for doc_id, doc_hash in doc_hashes.items():
            self.set_document_hash(doc_id, doc_hash)

    @abstractmethod
    def get_document_hash(self, doc_id: str) -> Optional[str]: ...

    @abstractmethod
    def get_all_document_hashes(self) -> Dict[str, str]:
        """``{hash: doc_id}``."""

    @abstractmethod
    def get_source_document_hashes(self) -> Dict[str, str]:
        """``{source document id: recorded hash}`` of every ingested source document (the inputs of
        ingestion, not their nodes).  The ingestion engine plans with it."""

    def list_ref_docs(self, offset: int = 0, limit: Optional[int] = None,
                      path_contains: Optional[str] = None) -> "tuple[int, List[RefDocSummary]]":
        """``(total, page)``: the number of source documents (whose ``file_path`` metadata contains
        ``path_contains``, case-insensitively, when given) and ``limit`` of them from ``offset``,
        ordered by id.  Stores with their own index override this scan of
        :meth:`get_all_ref_doc_info`."""
        infos = self.get_all_ref_doc_info() or {}
        needle = path_contains.casefold() if path_contains else None
        ids = sorted(
            ref for ref, info in infos.items()
            if needle is None or needle in str(info.metadata.get("file_path", "")).casefold()
        )
        page = ids[offset:] if limit is None else ids[offset:offset + limit]
        return len(ids), [
            RefDocSummary(ref_doc_id=ref, metadata=dict(infos[ref].metadata), node_count=len(infos[ref].node_ids),
                          doc_hash=self.get_document_hash(ref))
            for ref in page
        ]

    def ref_doc_counts(self, key: str) -> Dict[str, int]:
        """``{value: documents}``: how many source documents have each string value of metadata ``key``."""
        counts: Dict[str, int] = {}
        for info in (self.get_all_ref_doc_info() or {}).values():
            value = info.metadata.get(key)
            if isinstance(value, str):
                counts[value] = counts.get(value, 0) + 1
        return counts

    @property
    def database(self) -> Any:
        """The :class:`~ragloom.storage.sqlite.SQLiteDatabase` this store writes to, or ``None``.
        A vector store on the same database joins the docstore's transaction."""
        return None

    def set_node_source(self, source: Optional[Callable[[List[str]], List[BaseNode]]]) -> None:
        """Where :meth:`get_document` / :meth:`get_nodes` read the nodes this store records only by
        link and hash (``add_documents(store_text=False)``, used when the vector store keeps the
        text): ``source(node_ids)`` returns those it has.  :class:`~ragloom.storage.StorageContext`
        sets it to its vector store's ``get_nodes``, so ``index.docstore.get_node(id)`` works as in
        LlamaIndex (where the docstore holds every node).  ``None`` removes it.  A store that holds
        every node's text ignores it.
        """
        self._node_source = source

    def set_node_guard(self, guard: Optional[Callable[[List[str]], Set[str]]]) -> None:
        """``guard(node_ids)`` returns the ids among ``node_ids`` that an index of the storage context
        still holds (the docstore-backed indexes of :mod:`ragloom.indices.base`, which record the nodes
        they hold in the index store); :meth:`delete_ref_doc` keeps those nodes, so one index replacing a
        document never deletes the nodes another index uses.  :class:`~ragloom.storage.StorageContext`
        sets it.  ``None`` removes it.  A store that cannot honour it ignores it.
        """
        self._node_guard = guard

    # -- derived helpers (LlamaIndex names) --------------------------------------------------
    def get_node(self, node_id: str, raise_error: bool = True) -> BaseNode:
        """The node ``node_id`` (``ValueError`` if missing, or ``None`` with ``raise_error=False``)."""
        return self.get_document(node_id, raise_error=raise_error)  # type: ignore[return-value]

    def get_nodes(self, node_ids: List[str], raise_error: bool = True) -> List[BaseNode]:
        out = []
        for node_id in node_ids:
            node = self.get_node(node_id, raise_error=raise_error)
            if node is not None:
                out.append(node)
        return out

    def get_node_dict(self, node_id_dict: Dict[int, str]) -> Dict[int, BaseNode]:
        return {index: self.get_node(node_id) for index, node_id in node_id_dict.items()}

    def persist(self, persist_path: str = "", fs: Any = None) -> None:
        """Make the store durable at ``persist_path`` (no-op for stores that always are)."""
        return None

    # -- async variants --------------------------------------------------------------------
    async def async_add_documents(
        self,
        nodes: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: Optional[int] = None,
        store_text: bool = True,
    ) -> None:
        self.add_documents(nodes, allow_update=allow_update, batch_size=batch_size, store_text=store_text)

    async def aget_document(self, doc_id: str, raise_error: bool = True) -> Optional[BaseNode]:
        return self.get_document(doc_id, raise_error=raise_error)

    async def adelete_ref_doc(self, ref_doc_id: str, raise_error: bool = True) -> None:
        self.delete_ref_doc(ref_doc_id, raise_error=raise_error)

    async def aget_document_hash(self, doc_id: str) -> Optional[str]:
        return self.get_document_hash(doc_id)

    async def aset_document_hash(self, doc_id: str, doc_hash: str) -> None:
        self.set_document_hash(doc_id, doc_hash)
