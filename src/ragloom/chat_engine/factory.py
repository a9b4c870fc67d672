"""``chat_engine_for(index, chat_mode, llm, **kwargs)``: what ``index.as_chat_engine(...)`` builds.

``VectorStoreIndex.as_chat_engine`` and ``BaseIndex.as_chat_engine`` both delegate here.  The keyword
arguments are split as LlamaIndex uses them, but none is swallowed silently:

- ``chat_history``, ``memory`` and the engine's own arguments (:data:`ENGINE_ARGS`) go to the
  engine's ``from_defaults``;
- ``condense_question``: everything else goes to ``index.as_query_engine(llm=llm, ...)`` (retriever
  and synthesizer arguments; ``streaming`` defaults to ``True`` so ``stream_chat`` streams, and
  ``chat`` reads the stream whole);
- ``context`` / ``condense_plus_context``: everything else goes to ``index.as_retriever(...)``, except
  the query engine's own arguments (:data:`QUERY_ENGINE_ARGS`), which these modes do not use: they
  are dropped with a warning;
- ``simple``: retrieves nothing, so any other argument is dropped with a warning.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, FrozenSet, Protocol

from ragloom.chat_engine.types import BaseChatEngine, ChatMode

logger = logging.getLogger(__name__)

__all__ = ["chat_engine_for", "resolve_chat_mode", "CHAT_MODES", "ENGINE_ARGS", "QUERY_ENGINE_ARGS"]

#: every ``chat_mode`` value (``react`` and ``openai`` raise: ragloom has no agents)
CHAT_MODES = tuple(m.value for m in ChatMode)
#: what ``best`` picks (LlamaIndex: an agent with the query engine as a tool)
BEST_MODE = ChatMode.CONDENSE_PLUS_CONTEXT

_MEMORY_ARGS = frozenset({"chat_history", "memory"})
#: arguments each mode's engine takes (besides ``llm``, ``chat_history`` and ``memory``)
ENGINE_ARGS: Dict[ChatMode, FrozenSet[str]] = {
    ChatMode.SIMPLE: frozenset({"system_prompt", "prefix_messages"}),
    ChatMode.CONTEXT: frozenset({"system_prompt", "prefix_messages", "node_postprocessors", "context_template"}),
    # system_prompt / prefix_messages reach from_defaults, which explains why it refuses them
    ChatMode.CONDENSE_QUESTION: frozenset({"condense_question_prompt", "verbose", "system_prompt", "prefix_messages"}),
    ChatMode.CONDENSE_PLUS_CONTEXT: frozenset({
        "system_prompt", "context_prompt", "condense_prompt", "skip_condense", "node_postprocessors", "verbose",
    }),
}
#: arguments of ``as_query_engine`` that are not retriever arguments
QUERY_ENGINE_ARGS = frozenset({
    "response_mode", "streaming", "text_qa_template", "refine_template", "summary_template", "simple_template",
    "use_async", "prompt_helper", "response_synthesizer", "callback_manager",
})


class ChatIndex(Protocol):
    """What the factory uses of an index."""

    def as_retriever(self, **kwargs: Any) -> Any: ...

    def as_query_engine(self, llm: Any = None, **kwargs: Any) -> Any: ...


def resolve_chat_mode(chat_mode: Any) -> ChatMode:
    """``chat_mode`` (a :class:`ChatMode` or its value) as the mode that runs: ``best`` is
    ``condense_plus_context``.

    Raises:
        ValueError: an unknown mode, or ``react`` / ``openai`` (agents are not implemented in ragloom).
    """
    try:
        mode = ChatMode(chat_mode)
    except ValueError:
        raise ValueError(f"chat_mode must be one of {list(CHAT_MODES)}, got {chat_mode!r}") from None
    if mode in (ChatMode.REACT, ChatMode.OPENAI):
        raise ValueError(
            f"chat_mode {mode.value!r} is an agent (a tool-calling loop), which ragloom does not implement; use "
            "'condense_plus_context' (what 'best' picks), 'context', 'condense_question' or 'simple'"
        )
    return BEST_MODE if mode == ChatMode.BEST else mode


def _drop(args: Dict[str, Any], keys: Any, mode: ChatMode) -> None:
    unused = sorted(k for k in list(args) if k in keys)
    if unused:
        logger.warning("as_chat_engine(chat_mode=%r): %s not used by this mode, ignored", mode.value, unused)
        for k in unused:
            del args[k]


def chat_engine_for(index: ChatIndex, chat_mode: Any = "best", llm: Any = None, **kwargs: Any) -> BaseChatEngine:
    """A chat engine over ``index`` (what ``index.as_chat_engine`` returns).

    Args:
        index: a ``VectorStoreIndex`` or any ``BaseIndex`` (anything with ``as_retriever`` and
            ``as_query_engine``).
        chat_mode: a :class:`ChatMode` or its value: ``best`` (= ``condense_plus_context``),
            ``condense_plus_context``, ``context``, ``condense_question``, ``simple``.
        llm: an LLM or a :func:`~ragloom.llms.resolve_llm` spec; default ``Settings.llm``.
        **kwargs: split as the module docstring says (``similarity_top_k``, ``filters``,
            ``system_prompt``, ``chat_history`` ...).

    Raises:
        ValueError: a bad ``chat_mode`` (``react`` / ``openai`` included), no LLM configured, or a bad
            argument of the engine, retriever or query engine.
        TypeError: an argument that none of them takes (raised by the retriever, which names it).
    """
    from ragloom.chat_engine.condense_plus_context import CondensePlusContextChatEngine
    from ragloom.chat_engine.condense_question import CondenseQuestionChatEngine
    from ragloom.chat_engine.context import ContextChatEngine
    from ragloom.chat_engine.simple import SimpleChatEngine
    from ragloom.response_synthesizers.base import llm_or_default

    mode = resolve_chat_mode(chat_mode)
    model = llm_or_default(llm)
    own = _MEMORY_ARGS | ENGINE_ARGS[mode]
    engine_args = {k: kwargs.pop(k) for k in list(kwargs) if k in own}
    if mode == ChatMode.SIMPLE:
        _drop(kwargs, set(kwargs), mode)
        return SimpleChatEngine.from_defaults(llm=model, **engine_args)
    if mode == ChatMode.CONDENSE_QUESTION:
        kwargs.setdefault("streaming", True)
        query_engine = index.as_query_engine(llm=model, **kwargs)
        return CondenseQuestionChatEngine.from_defaults(query_engine, llm=model, **engine_args)
    _drop(kwargs, QUERY_ENGINE_ARGS, mode)
    retriever = index.as_retriever(**kwargs)
    if mode == ChatMode.CONTEXT:
        return ContextChatEngine.from_defaults(retriever, llm=model, **engine_args)
    return CondensePlusContextChatEngine.from_defaults(retriever, llm=model, **engine_args)
