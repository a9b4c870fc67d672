"""``ChatMemoryBuffer``: a conversation whose recent part fits a token limit (LlamaIndex's, counted better).

**How messages are counted.**  A message costs ``count(f"{role}: {content}")`` plus
:data:`MESSAGE_OVERHEAD_TOKENS` (the role markers and separators a chat template wraps around each
message: OpenAI's cookbook "How to count tokens with tiktoken" counts 3 per message for its chat
models; ragloom reserves 4, so the count errs on the side of fitting).  ``count`` is, in order of
preference, ``tokenizer_fn`` (LlamaIndex style: ``len(tokenizer_fn(text))``), the LLM's own
:meth:`~ragloom.llms.base.LLM.count_tokens`, or tiktoken ``cl100k_base``.  LlamaIndex counts every
buffer in ``cl100k_base`` and leaves out the roles, so for a model with another tokenizer (Qwen, Llama,
SmolLM) its limit is only an estimate; here it is measured in the tokenizer of the model that reads it.

**What** :meth:`ChatMemoryBuffer.get` **keeps** (:func:`fit_to_token_limit`): the longest suffix of the
conversation that fits, whose first message is not an assistant message.  So the oldest messages go
first, a user message and the answer that follows it are dropped together (the history never opens
with an answer whose question is gone), and a single message over the limit leaves nothing: ``get()``
returns ``[]`` (as LlamaIndex) while :meth:`~ChatMemoryBuffer.get_all` still has everything.  The chat
engines send the new user message outside the memory, so it is never dropped this way: a message that
does not fit the model's window on its own is a ``ValueError`` there.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from ragloom.llms.types import ChatMessage, MessageRole
from ragloom.memory.types import BaseMemory

__all__ = [
    "ChatMemoryBuffer",
    "DEFAULT_TOKEN_LIMIT",
    "DEFAULT_TOKEN_LIMIT_RATIO",
    "MESSAGE_OVERHEAD_TOKENS",
    "message_token_count",
    "messages_token_count",
    "fit_to_token_limit",
]

#: share of the LLM's context window a buffer may fill by default (LlamaIndex's constant)
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
#: limit of a buffer made without an LLM or a limit (LlamaIndex's constant)
DEFAULT_TOKEN_LIMIT = 3000
#: tokens added to each message for the chat template's role markers and separators (see the module docstring)
MESSAGE_OVERHEAD_TOKENS = 4

Counter = Callable[[str], int]


def message_token_count(message: ChatMessage, count: Counter) -> int:
    """Tokens ``message`` takes in a prompt: ``count(f"{role}: {content}") + MESSAGE_OVERHEAD_TOKENS``."""
    return count(f"{message.role.value}: {message.content or ''}") + MESSAGE_OVERHEAD_TOKENS


def messages_token_count(messages: Sequence[ChatMessage], count: Counter) -> int:
    """Sum of :func:`message_token_count` over ``messages``."""
    return sum(message_token_count(m, count) for m in messages)


def fit_to_token_limit(messages: Sequence[ChatMessage], token_limit: int, count: Counter) -> List[ChatMessage]:
    """The longest suffix of ``messages`` that takes at most ``token_limit`` tokens
    (:func:`messages_token_count`) and does not start with an assistant message; ``[]`` when none does
    (``token_limit`` < 0 included).

    Costs are additive, so the suffix is found in one pass from the newest message back; dropping the
    leading assistant messages afterwards only makes it smaller.
    """
    msgs = list(messages)
    start = len(msgs)
    used = 0
    while start > 0:
        cost = message_token_count(msgs[start - 1], count)
        if used + cost > token_limit:
            break
        used += cost
        start -= 1
    while start < len(msgs) and msgs[start].role == MessageRole.ASSISTANT:
        start += 1
    return msgs[start:]


def _check_messages(messages: Any, name: str) -> List[ChatMessage]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValueError(f"{name} must be a list of ChatMessage, got {type(messages).__name__}")
    out = list(messages)
    for i, m in enumerate(out):
        if not isinstance(m, ChatMessage):
            raise ValueError(f"{name}[{i}] must be a ChatMessage, got {type(m).__name__}")
    return out


def _check_limit(token_limit: Any) -> int:
    if isinstance(token_limit, bool) or not isinstance(token_limit, int) or token_limit < 1:
        raise ValueError(f"token_limit must be an int >= 1 (tokens), got {token_limit!r}")
    return token_limit


class ChatMemoryBuffer(BaseMemory):
    """A conversation kept whole, of which :meth:`get` returns the newest part that fits ``token_limit``.

    Args:
        token_limit: most tokens :meth:`get` returns (counted as the module docstring says); >= 1.
        tokenizer_fn: ``Callable[[str], list]`` whose ``len`` is the token count (LlamaIndex style);
            default: ``llm``'s tokenizer, else tiktoken ``cl100k_base``.
        chat_history: the conversation so far (``list[ChatMessage]``, oldest first).
        llm: the :class:`~ragloom.llms.base.LLM` whose :meth:`~ragloom.llms.base.LLM.count_tokens`
            measures the messages when no ``tokenizer_fn`` is given.

    Raises:
        ValueError: ``token_limit`` < 1 or not an int; ``tokenizer_fn`` not callable;
            ``chat_history`` not a list of :class:`~ragloom.llms.types.ChatMessage`.
    """

    def __init__(
        self,
        token_limit: int,
        tokenizer_fn: Optional[Callable[[str], Sequence[Any]]] = None,
        chat_history: Optional[Sequence[ChatMessage]] = None,
        llm: Any = None,
    ) -> None:
        self.token_limit = _check_limit(token_limit)
        if tokenizer_fn is not None and not callable(tokenizer_fn):
            raise ValueError(
                f"tokenizer_fn must be a callable str -> list of tokens, got {type(tokenizer_fn).__name__}"
            )
        self.tokenizer_fn = tokenizer_fn
        self._count: Counter
        if tokenizer_fn is not None:
            fn = tokenizer_fn
            self._count = lambda text: len(fn(text))
        elif llm is not None:
            self._count = llm.count_tokens
        else:
            from ragloom.tokenizers import get_tokenizer

            self._count = get_tokenizer("cl100k_base").count
        self._messages: List[ChatMessage] = (
            [] if chat_history is None else _check_messages(chat_history, "chat_history")
        )

    @classmethod
    def class_name(cls) -> str:
        return "ChatMemoryBuffer"

    @classmethod
    def from_defaults(
        cls,
        chat_history: Optional[Sequence[ChatMessage]] = None,
        llm: Any = None,
        token_limit: Optional[int] = None,
        tokenizer_fn: Optional[Callable[[str], Sequence[Any]]] = None,
    ) -> "ChatMemoryBuffer":
        """A buffer for ``llm``: ``token_limit`` defaults to ``int(0.75 × llm.metadata.context_window)``
        (:data:`DEFAULT_TOKEN_LIMIT_RATIO`), or :data:`DEFAULT_TOKEN_LIMIT` (3000) without an LLM; messages
        are counted in ``tokenizer_fn``, else the LLM's tokenizer, else ``cl100k_base``.

        Raises:
            ValueError: as the constructor.
        """
        if token_limit is None:
            if llm is not None:
                token_limit = max(1, int(llm.metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO))
            else:
                token_limit = DEFAULT_TOKEN_LIMIT
        return cls(token_limit=token_limit, tokenizer_fn=tokenizer_fn, chat_history=chat_history, llm=llm)

    # -- counting ----------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this buffer's tokenizer."""
        return self._count(text)

    def token_count(self, messages: Optional[Sequence[ChatMessage]] = None) -> int:
        """Tokens ``messages`` (default: the whole conversation) take, counted as :meth:`get` counts them."""
        return messages_token_count(self._messages if messages is None else messages, self._count)

    # -- BaseMemory ----------------------------------------------------------------------------------
    def get(self, input: Optional[str] = None, initial_token_count: int = 0) -> List[ChatMessage]:
        """The longest suffix of the conversation that fits ``token_limit - initial_token_count`` tokens
        and does not start with an assistant message (:func:`fit_to_token_limit`); ``[]`` if the newest
        message alone is over.

        Args:
            input: the message about to be sent; unused (LlamaIndex's signature).
            initial_token_count: tokens the rest of the prompt already takes; 0..``token_limit``.

        Raises:
            ValueError: ``initial_token_count`` < 0 or > ``token_limit``.
        """
        if isinstance(initial_token_count, bool) or not isinstance(initial_token_count, int) \
                or not 0 <= initial_token_count <= self.token_limit:
            raise ValueError(
                f"initial_token_count must be an int in 0..token_limit={self.token_limit} (tokens), "
                f"got {initial_token_count!r}"
            )
        return fit_to_token_limit(self._messages, self.token_limit - initial_token_count, self._count)

    def get_all(self) -> List[ChatMessage]:
        return list(self._messages)

    def put(self, message: ChatMessage) -> None:
        """Append ``message``.

        Raises:
            ValueError: ``message`` is not a :class:`~ragloom.llms.types.ChatMessage`.
        """
        self._messages.extend(_check_messages([message], "message"))

    def set(self, messages: Sequence[ChatMessage]) -> None:
        """Replace the conversation with ``messages`` (copied).

        Raises:
            ValueError: not a list of :class:`~ragloom.llms.types.ChatMessage`.
        """
        self._messages = _check_messages(messages, "messages")

    def reset(self) -> None:
        self._messages = []

    def __repr__(self) -> str:
        return f"ChatMemoryBuffer(token_limit={self.token_limit}, messages={len(self._messages)})"
