"""``trace_method``: run a method inside a trace of its component's callback manager
(LlamaIndex's ``llama_index.core.callbacks.utils.trace_method``)."""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

__all__ = ["trace_method"]

F = TypeVar("F", bound=Callable[..., Any])


def trace_method(trace_id: str) -> Callable[[F], F]:
    """Decorate a method of a component with a ``callback_manager`` property so each call runs in
    ``callback_manager.as_trace(trace_id)``; without handlers the method is called directly."""

    def decorator(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            cm = self.callback_manager
            if not cm.handlers:
                return fn(self, *args, **kwargs)
            with cm.as_trace(trace_id):
                return fn(self, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
