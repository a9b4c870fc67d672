"""Token budgets of the chat engines: every prompt fits the LLM's window, measured in its tokenizer.

The room a prompt has is ``context_window - num_output`` of ``llm.metadata`` (``num_output`` capped at
``context_window - 1``), counted with ``llm.count_tokens``; a message costs what
:func:`ragloom.memory.message_token_count` says (text plus :data:`~ragloom.memory.MESSAGE_OVERHEAD_TOKENS`).
What goes in, by priority:

1. the user's new message, the system prompt / prefix messages and the prompt template: these must fit,
   else ``ValueError`` (saying by how many tokens they are over);
2. the retrieved passages (:func:`build_context_turn`): all of them when they fit; otherwise as many of
   the best-ranked as can each keep at least :data:`MIN_CHUNK_TOKENS`, the room shared by
   water-filling (short passages stay whole, the long ones are cut at a token boundary with
   :meth:`PromptHelper.truncate_text <ragloom.indices.prompt_helper.PromptHelper.truncate_text>` to
   equal shares of what is left);
3. the conversation so far: the longest suffix that fits what remains (and the memory's own
   ``token_limit``), never starting with an assistant message
   (:func:`ragloom.memory.fit_to_token_limit`).

LlamaIndex's context engines count the history in ``cl100k_base`` against the memory's limit only,
and when the passages overflow they refine over several LLM calls; ragloom makes one call that fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from ragloom.llms.types import ChatMessage, MessageRole
from ragloom.memory.chat_memory_buffer import (
    MESSAGE_OVERHEAD_TOKENS,
    fit_to_token_limit,
    message_token_count,
    messages_token_count,
)
from ragloom.schema import MetadataMode, NodeWithScore

__all__ = [
    "CONTEXT_JOINER",
    "MIN_CHUNK_TOKENS",
    "ContextTurn",
    "prompt_budget",
    "history_str",
    "fit_history",
    "fit_condense_history",
    "fit_texts",
    "build_context_turn",
]

#: what separates two passages in ``{context_str}``
CONTEXT_JOINER = "\n\n"
#: fewest tokens a passage is cut to before it is left out instead (when the room is short)
MIN_CHUNK_TOKENS = 32
#: tokens reserved per passage for the joiner and for tokenization differences at the seams
#: (PromptHelper's default padding)
PASSAGE_PADDING = 5


def prompt_budget(llm: Any) -> int:
    """Tokens a prompt may take: ``context_window - num_output`` (``num_output`` capped at ``context_window - 1``)."""
    md = llm.metadata
    window = int(md.context_window)
    return window - min(int(md.num_output), max(0, window - 1))


def _over_budget(what: str, tokens: int, llm: Any) -> ValueError:
    md = llm.metadata
    budget = prompt_budget(llm)
    return ValueError(
        f"{what} take {tokens} tokens, {tokens - budget} more than the {budget} the model leaves for the prompt "
        f"(context_window={md.context_window} - num_output={min(int(md.num_output), max(0, md.context_window - 1))}, "
        f"counted in the LLM's tokenizer); shorten the message or the prompts, or use a model with a larger "
        "context window"
    )


def history_str(messages: Sequence[ChatMessage]) -> str:
    """The conversation as ``role: content`` lines (what ``{chat_history}`` of a condense prompt gets)."""
    return "\n".join(f"{m.role.value}: {m.content}" for m in messages)


def fit_history(llm: Any, history: Sequence[ChatMessage], fixed: Sequence[ChatMessage]) -> List[ChatMessage]:
    """The longest valid suffix of ``history`` that fits the prompt budget beside the ``fixed`` messages.

    Raises:
        ValueError: the ``fixed`` messages alone are over the budget.
    """
    used = messages_token_count(fixed, llm.count_tokens)
    budget = prompt_budget(llm)
    if used > budget:
        raise _over_budget("the message and the prompts", used, llm)
    return fit_to_token_limit(history, budget - used, llm.count_tokens)


def fit_condense_history(llm: Any, prompt: Any, history: Sequence[ChatMessage], question: str) -> List[ChatMessage]:
    """The longest valid suffix of ``history`` whose :func:`history_str` fits ``prompt`` (a condense
    prompt: ``chat_history``, ``question``) beside ``question``, sent as one user message by
    ``llm.predict`` (with the LLM's ``system_prompt``, if it has one).

    Raises:
        ValueError: the prompt with the question alone is over the budget.
    """
    count = llm.count_tokens
    used = count(prompt.format(chat_history="", question=question)) + MESSAGE_OVERHEAD_TOKENS
    if llm.system_prompt:
        used += count(llm.system_prompt) + MESSAGE_OVERHEAD_TOKENS
    budget = prompt_budget(llm)
    if used > budget:
        raise _over_budget("the condense prompt and the message", used, llm)
    # each line costs at most what the message costs in a chat (its overhead covers the newline)
    return fit_to_token_limit(history, budget - used, count)


def _water_fill(sizes: Sequence[int], total: int) -> Optional[List[int]]:
    """Split ``total`` tokens over items of ``sizes``: the smallest first, each getting
    ``min(size, what is left // items left)``; ``None`` when ``total`` < 0."""
    if total < 0:
        return None
    shares = [0] * len(sizes)
    left = total
    for k, i in enumerate(sorted(range(len(sizes)), key=lambda j: sizes[j])):
        give = min(sizes[i], left // (len(sizes) - k))
        shares[i] = give
        left -= give
    return shares


def fit_texts(helper: Any, texts: Sequence[str], room: int) -> List[Tuple[int, str]]:
    """The passages of ``texts`` (best first) that go into ``room`` tokens, as ``(index, text)``.

    All of them when their join fits; else the first ``n`` for the largest ``n`` whose water-filled
    shares of ``room - n * PASSAGE_PADDING`` give each at least ``min(its size, MIN_CHUNK_TOKENS)``,
    each cut to its share; else the first passage cut to ``room - PASSAGE_PADDING``; else nothing.
    ``helper`` is a :class:`~ragloom.indices.prompt_helper.PromptHelper` in the LLM's tokenizer.
    """
    if room <= 0 or not texts:
        return []
    if helper.count_tokens(CONTEXT_JOINER.join(texts)) <= room:
        return list(enumerate(texts))
    sizes = [helper.count_tokens(t) for t in texts]
    for n in range(len(texts), 0, -1):
        shares = _water_fill(sizes[:n], room - n * PASSAGE_PADDING)
        if shares is not None and all(s >= min(z, MIN_CHUNK_TOKENS) for s, z in zip(shares, sizes, strict=False)):
            cut = [(i, t if sizes[i] <= shares[i] else helper.truncate_text(t, shares[i])) for i, t in
                   enumerate(texts[:n])]
            return [(i, t) for i, t in cut if t]
    first = helper.truncate_text(texts[0], room - PASSAGE_PADDING) if room > PASSAGE_PADDING else ""
    return [(0, first)] if first else []


@dataclass
class ContextTurn:
    """The messages of one context-grounded answer.

    Attributes:
        messages: ``[system (system prompt + context template), *prefix, *history, user]``.
        nodes: the retrieved nodes whose text (whole or cut) is in the context, best first.
        context_str: what ``{context_str}`` was filled with.
    """

    messages: List[ChatMessage]
    nodes: List[NodeWithScore]
    context_str: str


def build_context_turn(
    llm: Any,
    template: Any,
    system_prompt: Optional[str],
    prefix: Sequence[ChatMessage],
    history: Sequence[ChatMessage],
    message: str,
    nodes: Sequence[NodeWithScore],
) -> ContextTurn:
    """The messages for answering ``message`` with the passages of ``nodes`` in the system message,
    fitted to the LLM's window (see the module docstring for what gives way first).

    The system message is ``system_prompt`` (when given), a blank line, then ``template`` filled with
    ``context_str`` (the passages' ``get_content(MetadataMode.LLM)``, joined by a blank line).

    Raises:
        ValueError: the message, ``prefix``, ``system_prompt`` and the empty template are over the budget.
    """
    from ragloom.indices.prompt_helper import PromptHelper

    count = llm.count_tokens
    budget = prompt_budget(llm)
    user = ChatMessage(role=MessageRole.USER, content=message)
    head = system_prompt.strip() if system_prompt else ""

    def system(ctx: str) -> ChatMessage:
        body = template.format(context_str=ctx)
        return ChatMessage(role=MessageRole.SYSTEM, content=f"{head}\n\n{body}" if head else body)

    base = messages_token_count([*prefix, user], count)
    fixed = base + message_token_count(system(""), count)
    if fixed > budget:
        raise _over_budget("the message, the system prompt and the context template", fixed, llm)
    texts = [n.node.get_content(MetadataMode.LLM).strip() for n in nodes]
    order = [i for i, t in enumerate(texts) if t]
    helper = PromptHelper.from_llm(llm)
    room = budget - fixed
    while True:  # ends: room shrinks on every pass, and no room means no passage and so no excess
        picked = fit_texts(helper, [texts[i] for i in order], room)
        ctx = CONTEXT_JOINER.join(t for _, t in picked)
        sys_msg = system(ctx)
        excess = base + message_token_count(sys_msg, count) - budget
        if excess <= 0:
            break
        room -= excess
    kept = [nodes[order[k]] for k, _ in picked]
    history_room = budget - base - message_token_count(sys_msg, count)
    past = fit_to_token_limit(history, history_room, count)
    return ContextTurn(messages=[sys_msg, *prefix, *past, user], nodes=kept, context_str=ctx)
