"""Callbacks: follow what ragloom does, step by step (LlamaIndex's ``llama_index.core.callbacks``).

::

    from ragloom import Settings
    from ragloom.callbacks import CallbackManager, LlamaDebugHandler, TokenCountingHandler

    debug = LlamaDebugHandler(print_trace_on_end=False)
    counter = TokenCountingHandler()
    Settings.callback_manager = CallbackManager([debug, counter])   # or callback_manager= per component
    response = index.as_query_engine(llm=llm).query("...")
    debug.get_llm_inputs_outputs()        # [[start, end], ...]: prompts and answers
    counter.total_llm_token_count         # in the LLM's own tokenizer, or as the provider reported

Events are emitted by the base classes (``LLM``, ``BaseEmbedding``, ``NodeParser``,
``BaseRetriever``, ``BaseSynthesizer``, ``BaseQueryEngine``, reranking postprocessors); which
manager a component reports to, and what an idle manager costs, is in
:mod:`ragloom.callbacks.base`; the event types and payloads in :mod:`ragloom.callbacks.schema`.
"""

from ragloom.callbacks.base import CallbackManager, EventContext
from ragloom.callbacks.base_handler import BaseCallbackHandler
from ragloom.callbacks.llama_debug import LlamaDebugHandler
from ragloom.callbacks.schema import CBEvent, CBEventType, EventPayload, EventStats
from ragloom.callbacks.token_counting import TokenCountingEvent, TokenCountingHandler
from ragloom.callbacks.utils import trace_method

__all__ = [
    "BaseCallbackHandler",
    "CBEvent",
    "CBEventType",
    "CallbackManager",
    "EventContext",
    "EventPayload",
    "EventStats",
    "LlamaDebugHandler",
    "TokenCountingEvent",
    "TokenCountingHandler",
    "trace_method",
]
