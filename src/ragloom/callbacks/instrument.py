"""How the base classes instrument themselves (used by ``LLM``, ``BaseEmbedding``, ``NodeParser``,
``BaseRetriever``, ``BaseSynthesizer``, ``BaseQueryEngine``, ``BaseNodePostprocessor``).

- :class:`CallbackManagerMixin` gives a class the ``callback_manager`` property (own manager,
  else the enclosing event's, else ``Settings.callback_manager``; see :mod:`ragloom.callbacks.base`).
- :func:`instrument_methods` wraps the methods a subclass *defines* under given names, called
  from the base class's ``__init_subclass__``: so an LLM that implements ``complete`` and
  ``chat`` itself, or a node parser that implements ``get_nodes_from_documents``, is instrumented
  without doing anything.
- :func:`enter_component` / :func:`leave_component`: a re-entry guard, so a call that an
  instrumented method of the same object makes to another (``RemoteLLM.complete`` on a chat
  model calls ``self.chat``; an override calling ``super()``) is one event, not two.
- :func:`traced_stream` / :func:`traced_astream`: an event around an iterator, started at the
  first item and ended when it is exhausted, closed or raises.
"""

from __future__ import annotations

import functools
import inspect
from contextvars import ContextVar, Token
from typing import Any, AsyncIterator, Callable, Dict, Iterator, Optional, Tuple

from ragloom.callbacks.base import (
    _SCOPE,
    CallbackManager,
    EventContext,
    _mark,
    check_callback_manager,
    current_parent_id,
)
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.settings import Settings

__all__ = [
    "CallbackManagerMixin",
    "enter_component",
    "leave_component",
    "is_busy",
    "instrument_methods",
    "traced_stream",
    "traced_astream",
    "current_parent_id",
]

#: ids of the objects whose instrumented method is running in this thread/task
_BUSY: ContextVar[Tuple[int, ...]] = ContextVar("ragloom_cb_busy", default=())
#: set on a wrapper made by :func:`instrument_methods`
INSTRUMENTED = "__ragloom_callbacks__"


class CallbackManagerMixin:
    """The ``callback_manager`` property of instrumented components.

    Reading it gives the manager the component reports to: the one assigned (constructor
    argument or ``component.callback_manager = cm``), else the manager of the enclosing event,
    else ``Settings.callback_manager``.  Assigning ``None`` goes back to that inheritance.

    Raises:
        ValueError: (on assignment) a value that is neither a ``CallbackManager`` nor ``None``.
    """

    _callback_manager: Optional[CallbackManager] = None

    @property
    def callback_manager(self) -> CallbackManager:
        cm = self._callback_manager
        if cm is not None:
            return cm
        cm = _SCOPE.get()
        if cm is not None:
            return cm
        return Settings.callback_manager

    @callback_manager.setter
    def callback_manager(self, value: Optional[CallbackManager]) -> None:
        self._callback_manager = check_callback_manager(value)


def enter_component(obj: Any) -> Optional[Token]:
    """Mark ``obj`` busy in this thread/task; ``None`` when it already is (the caller then calls
    through without an event).  Pair with :func:`leave_component`."""
    busy = _BUSY.get()
    key = id(obj)
    if key in busy:
        return None
    return _BUSY.set(busy + (key,))


def leave_component(token: Token) -> None:
    _BUSY.reset(token)


def is_busy(obj: Any) -> bool:
    """Whether an instrumented method of ``obj`` is running in this thread/task."""
    return id(obj) in _BUSY.get()


def instrument_methods(cls: type, wrappers: Dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]]) -> None:
    """Replace each plain function ``cls`` itself defines under a name of ``wrappers`` by
    ``wrappers[name](function)`` (with the function's name, docstring and ``__wrapped__``).
    Abstract methods and functions already wrapped are left alone."""
    for name, make in wrappers.items():
        fn = cls.__dict__.get(name)
        if not inspect.isfunction(fn) or getattr(fn, INSTRUMENTED, False) or getattr(fn, "__isabstractmethod__", False):
            continue
        wrapped = functools.wraps(fn)(make(fn))
        setattr(wrapped, INSTRUMENTED, True)
        setattr(cls, name, wrapped)


def traced_stream(
    cm: CallbackManager,
    obj: Any,
    event_type: CBEventType,
    start_payload: Callable[[], Dict[Any, Any]],
    make: Callable[[], Iterator[Any]],
    end_payload: Callable[[Any], Dict[Any, Any]],
    parent_id: Optional[str] = None,
) -> Iterator[Any]:
    """Yield the items of ``make()`` inside one ``event_type`` event of ``cm`` (a leaf event).

    The event starts when the first item is asked for (with parent ``parent_id``: pass
    :func:`~ragloom.callbacks.base.current_parent_id` taken when the stream was requested, so a
    stream consumed after its caller returned keeps its place in the tree), and ends with
    ``end_payload(last item)`` when the iterator is exhausted or closed early, or with
    ``{EXCEPTION: exc}`` when it raises.  ``obj`` is marked busy (:func:`enter_component`) only
    while an item is being produced, and ``cm`` is the inherited manager only then, so nothing
    leaks into the consumer between items.
    """
    ctx = EventContext(cm, event_type)
    last: Any = None
    try:
        scope = _SCOPE.set(cm)
        busy = enter_component(obj)
        try:
            ctx.on_start(payload=start_payload(), parent_id=parent_id)
            it = iter(make())
        finally:
            if busy is not None:
                leave_component(busy)
            _SCOPE.reset(scope)
        while True:
            scope = _SCOPE.set(cm)
            busy = enter_component(obj)
            try:
                item = next(it)
            except StopIteration:
                break
            finally:
                if busy is not None:
                    leave_component(busy)
                _SCOPE.reset(scope)
            last = item
            yield item
    except Exception as exc:
        if ctx.started and not ctx.finished:
            ctx.on_end(payload={EventPayload.EXCEPTION: exc})
        _mark(exc)
        raise
    finally:
        if ctx.started and not ctx.finished:
            ctx.on_end(payload=end_payload(last))


async def traced_astream(
    cm: CallbackManager,
    obj: Any,
    event_type: CBEventType,
    start_payload: Callable[[], Dict[Any, Any]],
    make: Callable[[], AsyncIterator[Any]],
    end_payload: Callable[[Any], Dict[Any, Any]],
    parent_id: Optional[str] = None,
) -> AsyncIterator[Any]:
    """The async-iterator form of :func:`traced_stream`."""
    ctx = EventContext(cm, event_type)
    last: Any = None
    try:
        ctx.on_start(payload=start_payload(), parent_id=parent_id)
        it = make().__aiter__()
        while True:
            scope = _SCOPE.set(cm)
            busy = enter_component(obj)
            try:
                item = await it.__anext__()
            except StopAsyncIteration:
                break
            finally:
                if busy is not None:
                    leave_component(busy)
                _SCOPE.reset(scope)
            last = item
            yield item
    except Exception as exc:
        if ctx.started and not ctx.finished:
            ctx.on_end(payload={EventPayload.EXCEPTION: exc})
        _mark(exc)
        raise
    finally:
        if ctx.started and not ctx.finished:
            ctx.on_end(payload=end_payload(last))
