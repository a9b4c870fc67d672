"""The index store protocol (LlamaIndex's ``BaseIndexStore``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, List, Optional

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

    async def async_add_index_struct(self, index_struct: IndexStruct) -> None:
        self.add_index_struct(index_struct)

    async def aget_index_struct(self, struct_id: Optional[str] = None) -> Optional[IndexStruct]:
        return self.get_index_struct(struct_id)
