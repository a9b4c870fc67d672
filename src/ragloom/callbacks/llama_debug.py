"""``LlamaDebugHandler``: keeps every event start and end in memory, pairs them, times them and
prints the trace tree (LlamaIndex's ``llama_index.core.callbacks.llama_debug``)."""

from __future__ import annotations

import threading
from collections import defaultdict
from datetime import datetime
from typing import Any, Dict, List, Optional

from ragloom.callbacks.base_handler import BaseCallbackHandler
from ragloom.callbacks.schema import BASE_TRACE_EVENT, TIMESTAMP_FORMAT, CBEvent, CBEventType, EventStats

__all__ = ["LlamaDebugHandler"]


def _when(event: CBEvent) -> datetime:
    return datetime.strptime(event.time, TIMESTAMP_FORMAT)


class LlamaDebugHandler(BaseCallbackHandler):
    """Records each event start and end as a :class:`~ragloom.callbacks.schema.CBEvent`.

    Args:
        event_starts_to_ignore, event_ends_to_ignore: see :class:`BaseCallbackHandler`.
        print_trace_on_end: print the tree of the trace's events with their durations
            (seconds) when an outermost trace ends (``"query"``, ``"index_construction"``).

    Events are kept until :meth:`flush_event_logs`; recording is guarded by a lock, so one
    handler can serve several threads.  Times have microsecond resolution (local wall clock).
    """

    def __init__(
        self,
        event_starts_to_ignore: Optional[List[CBEventType]] = None,
        event_ends_to_ignore: Optional[List[CBEventType]] = None,
        print_trace_on_end: bool = True,
    ) -> None:
        super().__init__(event_starts_to_ignore=event_starts_to_ignore, event_ends_to_ignore=event_ends_to_ignore)
        self.print_trace_on_end = bool(print_trace_on_end)
        self._lock = threading.Lock()
        self._event_pairs_by_type: Dict[CBEventType, List[CBEvent]] = defaultdict(list)
        self._event_pairs_by_id: Dict[str, List[CBEvent]] = defaultdict(list)
        self._sequential_events: List[CBEvent] = []
        self._cur_trace_id: Optional[str] = None
        self._trace_map: Dict[str, List[str]] = defaultdict(list)

    # -- recording --------------------------------------------------------------------------------
    def _record(self, event: CBEvent) -> None:
        with self._lock:
            self._event_pairs_by_type[event.event_type].append(event)
            self._event_pairs_by_id[event.id_].append(event)
            self._sequential_events.append(event)

    def on_event_start(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: str = "",
        parent_id: str = "",
        **kwargs: Any,
    ) -> str:
        event = CBEvent(event_type, payload=payload, id_=event_id)
        self._record(event)
        return event.id_

    def on_event_end(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: str = "",
        **kwargs: Any,
    ) -> None:
        self._record(CBEvent(event_type, payload=payload, id_=event_id))

    # -- queries ------------------------------------------------------------------------------------
    def get_events(self, event_type: Optional[CBEventType] = None) -> List[CBEvent]:
        """Recorded starts and ends (in order), of ``event_type`` only when given."""
        with self._lock:
            if event_type is not None:
                return list(self._event_pairs_by_type.get(event_type, []))
            return list(self._sequential_events)

    @staticmethod
    def _pair(events: List[CBEvent]) -> List[List[CBEvent]]:
        by_id: Dict[str, List[CBEvent]] = {}
        for event in events:
            by_id.setdefault(event.id_, []).append(event)
        return sorted(by_id.values(), key=lambda pair: _when(pair[0]))

    def get_event_pairs(self, event_type: Optional[CBEventType] = None) -> List[List[CBEvent]]:
        """``[[start, end], ...]`` by event id, ordered by start time (an event still open has
        only its start); of ``event_type`` only when given."""
        return self._pair(self.get_events(event_type))

    def get_llm_inputs_outputs(self) -> List[List[CBEvent]]:
        """The ``[start, end]`` pairs of LLM events: the start payload holds ``PROMPT`` (or
        ``MESSAGES``), the end payload ``COMPLETION`` (or ``RESPONSE``)."""
        return self.get_event_pairs(CBEventType.LLM)

    @staticmethod
    def _time_stats(pairs: List[List[CBEvent]]) -> EventStats:
        total = sum((_when(p[-1]) - _when(p[0])).total_seconds() for p in pairs)
        return EventStats(total_secs=total, average_secs=total / len(pairs) if pairs else 0.0, total_count=len(pairs))

    def get_event_time_info(self, event_type: Optional[CBEventType] = None) -> EventStats:
        """Total and mean duration (seconds) and count of the event pairs (of ``event_type``).
        No events give zeros (LlamaIndex divides by zero)."""
        return self._time_stats(self.get_event_pairs(event_type))

    def flush_event_logs(self) -> None:
        """Forget every recorded event."""
        with self._lock:
            self._event_pairs_by_type = defaultdict(list)
            self._event_pairs_by_id = defaultdict(list)
            self._sequential_events = []

    @property
    def event_pairs_by_type(self) -> Dict[CBEventType, List[CBEvent]]:
        return self._event_pairs_by_type

    @property
    def events_pairs_by_id(self) -> Dict[str, List[CBEvent]]:
        return self._event_pairs_by_id

    @property
    def sequential_events(self) -> List[CBEvent]:
        return self._sequential_events

    # -- traces -------------------------------------------------------------------------------------
    def start_trace(self, trace_id: Optional[str] = None) -> None:
        with self._lock:
            self._trace_map = defaultdict(list)
            self._cur_trace_id = trace_id

    def end_trace(self, trace_id: Optional[str] = None, trace_map: Optional[Dict[str, List[str]]] = None) -> None:
        with self._lock:
            self._trace_map = defaultdict(list, trace_map or {})
            self._cur_trace_id = trace_id
        if self.print_trace_on_end:
            self.print_trace_map()

    def _trace_lines(self, event_id: str, level: int, out: List[str]) -> None:
        pair = self._event_pairs_by_id.get(event_id)
        if pair:
            secs = self._time_stats([pair]).total_secs
            out.append(f"{'  ' * level}|_{pair[0].event_type.value} -> {secs:.6f} seconds")
        for child in self._trace_map.get(event_id, []):
            self._trace_lines(child, level + 1, out)

    def format_trace_map(self) -> str:
        """The last ended trace as an indented tree: one line per event, ``|_<type> -> <s> seconds``."""
        with self._lock:
            lines = ["*" * 10, f"Trace: {self._cur_trace_id}"]
            self._trace_lines(BASE_TRACE_EVENT, 0, lines)
        lines.append("*" * 10)
        return "\n".join(lines)

    def print_trace_map(self) -> None:
        """Print :meth:`format_trace_map` to standard output."""
        print(self.format_trace_map(), flush=True)
