"""``CondensePlusContextChatEngine``: condense the conversation into a standalone question, retrieve with
it, answer with the passages and the conversation (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ragloom.chat_engine.condense_question import condense_prompt_or_default
from ragloom.chat_engine.context import check_postprocessors, check_retriever
from ragloom.chat_engine.simple import default_memory
from ragloom.chat_engine.turn import Answer, Plan, Predict, Retrieve, TurnChatEngine
from ragloom.chat_engine.types import ToolOutput
from ragloom.chat_engine.utils import build_context_turn, fit_condense_history, history_str
from ragloom.llms.types import ChatMessage
from ragloom.memory import BaseMemory
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.chat_prompts import DEFAULT_CONTEXT_PROMPT
from ragloom.retrievers.base import BaseRetriever

__all__ = ["CondensePlusContextChatEngine"]


class CondensePlusContextChatEngine(TurnChatEngine):
    """Each turn:

    1. condense: unless ``skip_condense`` or the conversation is still empty (then the message is the
       question, as LlamaIndex), the LLM rewrites the history and the message as a standalone question
       with ``condense_prompt`` (``{chat_history}``, ``{question}``); an empty result falls back to the
       message;
    2. retrieve with that question (and the postprocessors);
    3. answer: ``[system, *history, user]`` where the system message is ``system_prompt``, a blank line,
       then ``context_prompt`` filled with the passages (``{context_str}``).

    Both prompts are fitted to the LLM's window in its tokenizer (:mod:`ragloom.chat_engine.utils`):
    the condense prompt drops the oldest turns, the answer keeps the passages first and as much recent
    history as fits; ``source_nodes`` are the passages that made it into the prompt.

    Args:
        retriever: a :class:`~ragloom.retrievers.BaseRetriever`.
        llm: the LLM that condenses and answers.
        memory: the conversation.
        context_prompt: default :data:`~ragloom.prompts.chat_prompts.DEFAULT_CONTEXT_PROMPT`.
        condense_prompt: default :data:`~ragloom.prompts.chat_prompts.DEFAULT_CONDENSE_QUESTION_PROMPT`.
        system_prompt: put before the context in the system message.
        skip_condense: retrieve with the message itself, never condensing.
        node_postprocessors: applied to the retrieved nodes, in order.
        verbose: print ``Querying with: <question>`` each turn.

    Raises:
        ValueError: a bad retriever, postprocessor or prompt.
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: Any,
        memory: BaseMemory,
        context_prompt: Any = None,
        condense_prompt: Any = None,
        system_prompt: Optional[str] = None,
        skip_condense: bool = False,
        node_postprocessors: Optional[Sequence[Any]] = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(llm, memory, verbose=verbose)
        self._retriever = check_retriever(retriever)
        template = DEFAULT_CONTEXT_PROMPT if context_prompt is None else to_prompt(context_prompt, "context_prompt")
        check_vars(template, ["context_str"], "context_prompt")
        self._context_prompt = template
        self._condense_prompt = condense_prompt_or_default(condense_prompt, "condense_prompt")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValueError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        self._system_prompt = system_prompt
        self._skip_condense = bool(skip_condense)
        self._node_postprocessors = check_postprocessors(node_postprocessors)

    @classmethod
    def from_defaults(
        cls,
        retriever: BaseRetriever,
        llm: Any = None,
        chat_history: Optional[Sequence[ChatMessage]] = None,
        memory: Optional[BaseMemory] = None,
        system_prompt: Optional[str] = None,
        context_prompt: Any = None,
        condense_prompt: Any = None,
        skip_condense: bool = False,
        node_postprocessors: Optional[Sequence[Any]] = None,
        verbose: bool = False,
    ) -> "CondensePlusContextChatEngine":
        """An engine over ``retriever`` and ``llm`` (default ``Settings.llm``), with a
        :class:`~ragloom.memory.ChatMemoryBuffer` holding ``chat_history`` unless ``memory`` is given.

        Raises:
            ValueError: no LLM; both ``memory`` and ``chat_history``; as the constructor.
        """
        from ragloom.response_synthesizers.base import llm_or_default

        llm = llm_or_default(llm)
        return cls(retriever, llm, default_memory(llm, chat_history, memory), context_prompt=context_prompt,
                   condense_prompt=condense_prompt, system_prompt=system_prompt, skip_condense=skip_condense,
                   node_postprocessors=node_postprocessors, verbose=verbose)

    def _plan(self, message: str) -> Plan:
        history = self._memory.get(input=message)
        question = message
        if history and not self._skip_condense:
            past = fit_condense_history(self._llm, self._condense_prompt, history, message)
            condensed = yield Predict(self._condense_prompt, {"chat_history": history_str(past), "question": message})
            question = condensed.strip() or message
            self._note_question(question)
        nodes = yield Retrieve(question, self._retriever, self._node_postprocessors)
        turn = build_context_turn(self._llm, self._context_prompt, self._system_prompt, [], history, message, nodes)
        source = ToolOutput(content=turn.context_str, tool_name="retriever", raw_input={"message": question},
                            raw_output=turn.nodes)
        return Answer(messages=turn.messages, sources=[source], source_nodes=turn.nodes)
