"""``ContextChatEngine``: retrieve with the user's message, answer with the passages in the system
message (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ragloom.chat_engine.simple import default_memory, prefix_from
from ragloom.chat_engine.turn import Answer, Plan, Retrieve, TurnChatEngine
from ragloom.chat_engine.types import ToolOutput
from ragloom.chat_engine.utils import build_context_turn
from ragloom.llms.types import ChatMessage, MessageRole
from ragloom.memory import BaseMemory
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.chat_prompts import DEFAULT_CONTEXT_TEMPLATE
from ragloom.retrievers.base import BaseRetriever

__all__ = ["ContextChatEngine", "check_retriever", "check_postprocessors"]


def check_retriever(retriever: Any) -> BaseRetriever:
    """``retriever`` if it is a :class:`~ragloom.retrievers.BaseRetriever`.

    Raises:
        ValueError: it is not.
    """
    if not isinstance(retriever, BaseRetriever):
        raise ValueError(f"retriever must be a ragloom BaseRetriever (index.as_retriever()), got "
                         f"{type(retriever).__name__}")
    return retriever


def check_postprocessors(node_postprocessors: Optional[Sequence[Any]]) -> List[Any]:
    """``node_postprocessors`` as a list, each a :class:`~ragloom.postprocessor.types.BaseNodePostprocessor`.

    Raises:
        ValueError: one is not.
    """
    from ragloom.postprocessor.types import BaseNodePostprocessor

    out = list(node_postprocessors or [])
    for i, p in enumerate(out):
        if not isinstance(p, BaseNodePostprocessor):
            raise ValueError(f"node_postprocessors[{i}] must be a BaseNodePostprocessor, got {type(p).__name__}")
    return out


class ContextChatEngine(TurnChatEngine):
    """Retrieve with the user's message, then answer it with the passages in the system message.

    Each turn: ``retriever.retrieve(message)`` and the postprocessors; the LLM gets
    ``[system, *prefix_messages, *history, user]`` where the system message is the first prefix
    message when it is a system message (LlamaIndex's ``system_prompt``), a blank line, then
    ``context_template`` filled with the passages.  Everything is fitted to the LLM's window in its
    tokenizer (:mod:`ragloom.chat_engine.utils`): passages first, then as much recent history as fits;
    ``source_nodes`` are the passages that made it into the prompt.

    Args:
        retriever: a :class:`~ragloom.retrievers.BaseRetriever`.
        llm: the :class:`~ragloom.llms.base.LLM`.
        memory: the conversation.
        prefix_messages: messages that open every prompt.
        node_postprocessors: applied to the retrieved nodes, in order.
        context_template: a prompt (or ``str``) with ``{context_str}``; default
            :data:`~ragloom.prompts.chat_prompts.DEFAULT_CONTEXT_TEMPLATE`.

    Raises:
        ValueError: a bad retriever, postprocessor or template (no ``{context_str}``).
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: Any,
        memory: BaseMemory,
        prefix_messages: Optional[Sequence[ChatMessage]] = None,
        node_postprocessors: Optional[Sequence[Any]] = None,
        context_template: Any = None,
    ) -> None:
        super().__init__(llm, memory)
        self._retriever = check_retriever(retriever)
        prefix = prefix_from(None, prefix_messages)
        self._system_prompt: Optional[str] = None
        if prefix and prefix[0].role == MessageRole.SYSTEM:
            self._system_prompt, prefix = prefix[0].content, prefix[1:]
        self._prefix_messages = prefix
        self._node_postprocessors = check_postprocessors(node_postprocessors)
        template = DEFAULT_CONTEXT_TEMPLATE if context_template is None else to_prompt(context_template,
                                                                                         "context_template")
        check_vars(template, ["context_str"], "context_template")
        self._context_template = template

    @classmethod
    def from_defaults(
        cls,
        retriever: BaseRetriever,
        chat_history: Optional[Sequence[ChatMessage]] = None,
        memory: Optional[BaseMemory] = None,
        system_prompt: Optional[str] = None,
        prefix_messages: Optional[Sequence[ChatMessage]] = None,
        node_postprocessors: Optional[Sequence[Any]] = None,
        context_template: Any = None,
        llm: Any = None,
    ) -> "ContextChatEngine":
        """An engine over ``retriever`` and ``llm`` (default ``Settings.llm``), with a
        :class:`~ragloom.memory.ChatMemoryBuffer` holding ``chat_history`` unless ``memory`` is given.

        Raises:
            ValueError: no LLM; both ``system_prompt`` and ``prefix_messages``; both ``memory`` and
                ``chat_history``; as the constructor.
        """
        from ragloom.response_synthesizers.base import llm_or_default

        llm = llm_or_default(llm)
        return cls(retriever, llm=llm, memory=default_memory(llm, chat_history, memory),
                   prefix_messages=prefix_from(system_prompt, prefix_messages),
                   node_postprocessors=node_postprocessors, context_template=context_template)

    def _plan(self, message: str) -> Plan:
        nodes = yield Retrieve(message, self._retriever, self._node_postprocessors)
        turn = build_context_turn(self._llm, self._context_template, self._system_prompt, self._prefix_messages,
                                  self._memory.get(input=message), message, nodes)
        source = ToolOutput(content=turn.context_str, tool_name="retriever", raw_input={"message": message},
                            raw_output=turn.nodes)
        return Answer(messages=turn.messages, sources=[source], source_nodes=turn.nodes)
