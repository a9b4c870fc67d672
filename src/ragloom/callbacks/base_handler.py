"""``BaseCallbackHandler``: what a :class:`~ragloom.callbacks.CallbackManager` calls
(LlamaIndex's ``llama_index.core.callbacks.base_handler``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, List, Optional

from ragloom.callbacks.schema import CBEventType

__all__ = ["BaseCallbackHandler"]


def _event_types(value: Optional[List[CBEventType]], name: str) -> List[CBEventType]:
    out: List[CBEventType] = []
    for v in value or []:
        try:
            out.append(CBEventType(v))
        except ValueError:
            allowed = ", ".join(t.value for t in CBEventType)
            raise ValueError(f"{name} must hold CBEventType values ({allowed}), got {v!r}") from None
    return out


class BaseCallbackHandler(ABC):
    """Base class of callback handlers.

    Subclasses implement :meth:`on_event_start`, :meth:`on_event_end`, :meth:`start_trace` and
    :meth:`end_trace`.  The manager calls them from whatever thread runs the traced step, so a
    handler shared by threads (``ragloom serve``) must guard its own state (the bundled handlers
    do).

    Args:
        event_starts_to_ignore: event types whose starts the manager does not send to this handler.
        event_ends_to_ignore: event types whose ends the manager does not send to this handler.

    Raises:
        ValueError: an entry of either list is not a :class:`CBEventType` (or its value).
    """

    def __init__(
        self,
        event_starts_to_ignore: Optional[List[CBEventType]] = None,
        event_ends_to_ignore: Optional[List[CBEventType]] = None,
    ) -> None:
        self.event_starts_to_ignore = tuple(_event_types(event_starts_to_ignore, "event_starts_to_ignore"))
        self.event_ends_to_ignore = tuple(_event_types(event_ends_to_ignore, "event_ends_to_ignore"))

    @abstractmethod
    def on_event_start(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: str = "",
        parent_id: str = "",
        **kwargs: Any,
    ) -> str:
        """An event began; returns ``event_id``."""

    @abstractmethod
    def on_event_end(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: str = "",
        **kwargs: Any,
    ) -> None:
        """An event ended (``payload`` holds ``EventPayload.EXCEPTION`` when it raised)."""

    @abstractmethod
    def start_trace(self, trace_id: Optional[str] = None) -> None:
        """An outermost trace (``"query"``, ``"index_construction"`` …) began."""

    @abstractmethod
    def end_trace(
        self,
        trace_id: Optional[str] = None,
        trace_map: Optional[Dict[str, List[str]]] = None,
    ) -> None:
        """The outermost trace ended; ``trace_map`` maps each parent event id (``"root"`` for the
        top) to the ids of the events started under it, in order."""
