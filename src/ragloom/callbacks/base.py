"""``CallbackManager``: sends event starts and ends to its handlers and keeps the parent/child
map of a trace (LlamaIndex's ``llama_index.core.callbacks.base``).

Which manager a component reports to
------------------------------------
Every instrumented component (LLMs, embed models, node parsers, retrievers, synthesizers, query
engines, reranking postprocessors) has a ``callback_manager`` property resolved on each call:

1. the manager given to the component (``callback_manager=`` argument or attribute);
2. else the manager of the event the call happens inside: while a component reports an event to
   manager ``cm`` (``with cm.event(...)``), every component it calls that has no manager of its
   own reports to ``cm`` too;
3. else :attr:`ragloom.Settings.callback_manager` (an empty manager until set).

So ``index.as_query_engine(llm=llm, callback_manager=cm).query(q)`` reports the QUERY, RETRIEVE,
EMBEDDING, SYNTHESIZE and LLM events to ``cm`` without changing the LLM or embed model objects
(LlamaIndex assigns ``cm`` to the shared LLM and embed model; a model shared by two engines then
reports to whichever engine was built last).  Settings is read at call time, so setting
``Settings.callback_manager`` after building an index still takes effect.

Cost without handlers
---------------------
An instrumented method first resolves its manager (an attribute read, a ``ContextVar.get``
and, at worst, a Settings attribute) and, when ``manager.handlers`` is empty, calls straight
through: no payload, no uuid, no clock read.  ``benchmarks/callbacks_overhead.py`` measures it
(``benchmarks/results/callbacks_overhead.txt``).

Threads and tasks
-----------------
The stack of open events, the open trace and the inheritance of step 2 are ``ContextVar`` s:
each thread and each asyncio task has its own, so one manager can be shared by the threads of
``ragloom serve``; events of concurrent queries get the right parents.  ``asyncio.to_thread`` and
``asyncio`` tasks copy the context, so work they run keeps its parent; a plain
``threading.Thread`` or ``ThreadPoolExecutor.submit`` starts with an empty context (its events
have parent ``"root"`` and resolve to Settings) unless it is given ``contextvars.copy_context()``.
Handlers are called from the thread doing the work; the bundled handlers lock their state.
Node parsing that the ingestion engine hands to worker *processes* (``num_workers > 1`` on large
inputs) reports no events: a manager pickles as an empty one, handlers stay in this process.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ragloom.callbacks.base_handler import BaseCallbackHandler
from ragloom.callbacks.schema import BASE_TRACE_EVENT, LEAF_EVENTS, CBEventType, EventPayload
from ragloom.settings import Settings

logger = logging.getLogger(__name__)

__all__ = [
    "CallbackManager",
    "EventContext",
    "callback_scope",
    "check_callback_manager",
    "current_parent_id",
    "resolve_callback_manager",
]

#: open non-leaf events of this thread/task, outermost first (``"root"`` at the bottom)
_EVENT_STACK: ContextVar[Tuple[str, ...]] = ContextVar("ragloom_cb_event_stack", default=(BASE_TRACE_EVENT,))
#: ids of the traces open in this thread/task, outermost first
_TRACE_IDS: ContextVar[Tuple[str, ...]] = ContextVar("ragloom_cb_trace_ids", default=())
#: parent id -> child event ids of the outermost open trace (``None`` outside traces)
_TRACE_MAP: ContextVar[Optional[Dict[str, List[str]]]] = ContextVar("ragloom_cb_trace_map", default=None)
#: the manager of the innermost open ``event()`` block: components without their own report to it
_SCOPE: ContextVar[Optional["CallbackManager"]] = ContextVar("ragloom_cb_scope", default=None)

#: attribute set on an exception once an event has recorded it (as LlamaIndex's ``event_added``)
_MARK = "event_added"


def _mark(exc: BaseException) -> None:
    try:
        setattr(exc, _MARK, True)
    except (AttributeError, TypeError):  # an exception type without __dict__
        pass


def _check_handler(handler: Any, name: str) -> BaseCallbackHandler:
    if not isinstance(handler, BaseCallbackHandler):
        raise ValueError(f"{name} must be a BaseCallbackHandler, got {type(handler).__name__}")
    return handler


class CallbackManager:
    """Calls its handlers when events start and end, and tracks which event contains which.

    Args:
        handlers: the :class:`~ragloom.callbacks.BaseCallbackHandler` s to call (copied into
            :attr:`handlers`); ``None``: none.

    Attributes:
        handlers: the handlers, in call order.  Empty means "nothing to do": instrumented code
            checks it first and skips all event work.

    Raises:
        ValueError: an entry of ``handlers`` is not a ``BaseCallbackHandler``.

    A handler that raises propagates to the traced call (as in LlamaIndex): handlers must not
    fail.  Usage::

        with callback_manager.event(CBEventType.QUERY, payload={EventPayload.QUERY_STR: q}) as event:
            response = ...
            event.on_end(payload={EventPayload.RESPONSE: response})
    """

    def __init__(self, handlers: Optional[List[BaseCallbackHandler]] = None) -> None:
        self.handlers: List[BaseCallbackHandler] = [
            _check_handler(h, f"handlers[{i}]") for i, h in enumerate(handlers or [])
        ]
        self._last_trace_map: Dict[str, List[str]] = defaultdict(list)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        """Pickle as an empty manager: handlers hold this process's state (and locks), so a copy
        sent to a worker process reports nowhere."""
        return (CallbackManager, ())

    def __repr__(self) -> str:
        return f"CallbackManager(handlers={[type(h).__name__ for h in self.handlers]})"

    # -- handlers -------------------------------------------------------------------------------
    def add_handler(self, handler: BaseCallbackHandler) -> None:
        """Append ``handler``.

        Raises:
            ValueError: ``handler`` is not a ``BaseCallbackHandler``.
        """
        self.handlers.append(_check_handler(handler, "handler"))

    def remove_handler(self, handler: BaseCallbackHandler) -> None:
        """Remove ``handler``.

        Raises:
            ValueError: ``handler`` is not one of :attr:`handlers`.
        """
        try:
            self.handlers.remove(handler)
        except ValueError:
            raise ValueError(f"handler {handler!r} is not registered with this CallbackManager") from None

    def set_handlers(self, handlers: List[BaseCallbackHandler]) -> None:
        """Replace every handler with ``handlers``.

        Raises:
            ValueError: an entry is not a ``BaseCallbackHandler``.
        """
        self.handlers = [_check_handler(h, f"handlers[{i}]") for i, h in enumerate(handlers)]

    # -- events ---------------------------------------------------------------------------------
    def on_event_start(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: Optional[str] = None,
        parent_id: Optional[str] = None,
        **kwargs: Any,
    ) -> str:
        """Tell the handlers (except those ignoring ``event_type`` starts) that an event began;
        returns its id (``event_id``, else a new uuid4).

        ``parent_id`` defaults to the innermost open non-leaf event of this thread/task
        (``"root"`` outside any).  A non-leaf event (not in ``LEAF_EVENTS``) becomes the parent of
        the events started before its :meth:`on_event_end`.
        """
        event_id = event_id or str(uuid.uuid4())
        stack = _EVENT_STACK.get()
        if parent_id is None:
            parent_id = stack[-1]
        trace_map = _TRACE_MAP.get()
        if trace_map is not None:
            trace_map[parent_id].append(event_id)
        for handler in tuple(self.handlers):
            if event_type not in handler.event_starts_to_ignore:
                handler.on_event_start(event_type, payload, event_id=event_id, parent_id=parent_id, **kwargs)
        if event_type not in LEAF_EVENTS:
            _EVENT_STACK.set(stack + (event_id,))
        return event_id

    def on_event_end(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        """Tell the handlers (except those ignoring ``event_type`` ends) that event ``event_id`` ended."""
        event_id = event_id or str(uuid.uuid4())
        try:
            for handler in tuple(self.handlers):
                if event_type not in handler.event_ends_to_ignore:
                    handler.on_event_end(event_type, payload, event_id=event_id, **kwargs)
        finally:
            if event_type not in LEAF_EVENTS:
                stack = _EVENT_STACK.get()
                if event_id in stack[1:]:
                    i = len(stack) - 1 - stack[::-1].index(event_id)
                    _EVENT_STACK.set(stack[:i] + stack[i + 1 :])

    @contextmanager
    def event(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: Optional[str] = None,
    ) -> Iterator["EventContext"]:
        """Start an event, yield its :class:`EventContext`, end it on leaving the block.

        Call ``event.on_end(payload=...)`` inside the block to end it with a payload; otherwise it
        ends with ``None``.  An exception leaving the block ends it with
        ``{EventPayload.EXCEPTION: exc}`` and propagates.  Inside the block, components without a
        manager of their own report to this one (see the module docstring).
        """
        ctx = EventContext(self, event_type, event_id=event_id)
        ctx.on_start(payload=payload)
        token = _SCOPE.set(self)
        try:
            yield ctx
        except Exception as exc:
            if not ctx.finished:
                ctx.on_end(payload={EventPayload.EXCEPTION: exc})
            _mark(exc)
            raise
        finally:
            _SCOPE.reset(token)
            if not ctx.finished:
                ctx.on_end(payload=None)

    # -- traces ---------------------------------------------------------------------------------
    @contextmanager
    def as_trace(self, trace_id: str) -> Iterator[None]:
        """:meth:`start_trace` on entering, :meth:`end_trace` on leaving.  An exception that no
        event recorded is reported as an ``EXCEPTION`` event (start and end) before it propagates."""
        self.start_trace(trace_id=trace_id)
        try:
            yield
        except Exception as exc:
            if not getattr(exc, _MARK, False):
                with self.event(CBEventType.EXCEPTION, payload={EventPayload.EXCEPTION: exc}) as ev:
                    ev.on_end(payload={EventPayload.EXCEPTION: exc})
                _mark(exc)
            raise
        finally:
            self.end_trace(trace_id=trace_id)

    def start_trace(self, trace_id: Optional[str] = None) -> None:
        """Open trace ``trace_id`` in this thread/task.  Only the outermost trace reaches the
        handlers (``start_trace``) and collects a trace map; nested ones are counted.
        ``None`` does nothing."""
        if trace_id is None:
            return
        ids = _TRACE_IDS.get()
        if not ids:
            _TRACE_MAP.set(defaultdict(list))
            for handler in tuple(self.handlers):
                handler.start_trace(trace_id=trace_id)
        _TRACE_IDS.set(ids + (trace_id,))

    def end_trace(self, trace_id: Optional[str] = None, trace_map: Optional[Dict[str, List[str]]] = None) -> None:
        """Close the innermost open trace; when it was the outermost, the handlers get
        ``end_trace(trace_id, trace_map)`` with the map it collected (or ``trace_map`` if given).
        ``None``, or no open trace, does nothing."""
        ids = _TRACE_IDS.get()
        if trace_id is None or not ids:
            return
        ids = ids[:-1]
        _TRACE_IDS.set(ids)
        if ids:
            return
        collected = _TRACE_MAP.get()
        _TRACE_MAP.set(None)
        final = trace_map if trace_map is not None else (collected if collected is not None else defaultdict(list))
        self._last_trace_map = final
        for handler in tuple(self.handlers):
            handler.end_trace(trace_id=trace_id, trace_map=final)

    @property
    def trace_map(self) -> Dict[str, List[str]]:
        """Parent event id -> child event ids: of the trace open in this thread/task, else of the
        last trace this manager ended."""
        current = _TRACE_MAP.get()
        return current if current is not None else self._last_trace_map


class EventContext:
    """One event of a :class:`CallbackManager`: :meth:`on_start` and :meth:`on_end` each reach the
    handlers once (a second call is logged and ignored).

    Args:
        callback_manager: the manager to report to.
        event_type: the :class:`CBEventType`.
        event_id: the id; default a new uuid4.
    """

    def __init__(self, callback_manager: CallbackManager, event_type: CBEventType,
                 event_id: Optional[str] = None) -> None:
        self._callback_manager = callback_manager
        self._event_type = event_type
        self._event_id = event_id or str(uuid.uuid4())
        self.started = False
        self.finished = False

    @property
    def event_id(self) -> str:
        return self._event_id

    def on_start(self, payload: Optional[Dict[Any, Any]] = None, **kwargs: Any) -> None:
        if self.started:
            logger.warning("event %s %s already started", self._event_type.value, self._event_id)
            return
        self.started = True
        self._callback_manager.on_event_start(self._event_type, payload=payload, event_id=self._event_id, **kwargs)

    def on_end(self, payload: Optional[Dict[Any, Any]] = None, **kwargs: Any) -> None:
        if self.finished:
            return
        self.finished = True
        self._callback_manager.on_event_end(self._event_type, payload=payload, event_id=self._event_id, **kwargs)


def current_parent_id() -> str:
    """The id new events of this thread/task get as parent: the innermost open non-leaf event, or
    ``"root"``."""
    return _EVENT_STACK.get()[-1]


def check_callback_manager(value: Any, name: str = "callback_manager") -> Optional[CallbackManager]:
    """``value`` if it is a :class:`CallbackManager` or ``None``.

    Raises:
        ValueError: anything else (the message names ``name``).
    """
    if value is None or isinstance(value, CallbackManager):
        return value
    raise ValueError(f"{name} must be a ragloom.callbacks.CallbackManager or None, got {type(value).__name__}")


def resolve_callback_manager(explicit: Optional[CallbackManager] = None) -> CallbackManager:
    """The manager a component reports to: ``explicit``, else the manager of the enclosing
    ``event()`` block, else ``Settings.callback_manager`` (see the module docstring)."""
    if explicit is not None:
        return explicit
    scoped = _SCOPE.get()
    if scoped is not None:
        return scoped
    return Settings.callback_manager


@contextmanager
def callback_scope(callback_manager: Optional[CallbackManager], trace_id: Optional[str] = None) -> Iterator[None]:
    """Run the block as a component whose own manager is ``callback_manager`` (``None``:
    inherited): inside it, components without a manager of their own report to it, within trace
    ``trace_id`` when given.  Indexes use it around ingestion, so the node parsers and embed
    model report to the index's manager inside an ``"index_construction"`` trace.  When the
    resolved manager has no handlers it costs that one check."""
    cm = resolve_callback_manager(callback_manager)
    if not cm.handlers:
        yield
        return
    token: Token = _SCOPE.set(cm)
    try:
        if trace_id is None:
            yield
        else:
            with cm.as_trace(trace_id):
                yield
    finally:
        _SCOPE.reset(token)
