"""``TokenCountingHandler``: counts the tokens of LLM and embedding events (LlamaIndex's
``llama_index.core.callbacks.token_counting``).

Which count wins, per number (prompt and completion separately):

1. the numbers the provider reported with the answer (``response.raw``): OpenAI-style ``usage``
   (``prompt_tokens`` / ``completion_tokens``, or ``input_tokens`` / ``output_tokens``) or
   Ollama's ``prompt_eval_count`` / ``eval_count``.  They are what the model really read and
   wrote (chat-template tokens included) and what is billed.  Streamed answers usually carry
   none (ragloom's clients do not request OpenAI's ``stream_options.include_usage``);
2. else the handler's ``tokenizer=`` when one was given;
3. else the tokenizer of the model that did the work (ragloom, unlike LlamaIndex, which uses
   one global tokenizer): ``llm.get_tokenizer()`` for LLM events, ``embed_model.get_tokenizer()``
   for embedding events, sent in the event payload as ``EventPayload.TOKENIZER``;
4. else :func:`ragloom.tokenizers.get_default_tokenizer`.

Counted text: a completion prompt as sent; a chat prompt as the sum of its messages' contents
(no per-message template tokens: only provider usage includes those); the answer text; each text
an embed model computed (cached vectors cost no tokens and are not counted).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragloom.callbacks.base_handler import BaseCallbackHandler
from ragloom.callbacks.schema import CBEventType, EventPayload

__all__ = ["TokenCountingEvent", "TokenCountingHandler", "get_tokens_from_response"]

#: keys of provider-reported usage, in order of preference
_PROMPT_KEYS = ("prompt_tokens", "input_tokens", "prompt_token_count", "prompt_eval_count")
_COMPLETION_KEYS = ("completion_tokens", "output_tokens", "candidates_token_count", "eval_count")


@dataclass
class TokenCountingEvent:
    """Token counts of one LLM call (or of one embedded text: ``completion`` empty).

    Attributes:
        prompt: the prompt text (chat: ``"role: content"`` lines).
        completion: the answer text.
        completion_token_count, prompt_token_count: tokens.
        total_token_count: their sum (computed).
        event_id: the event the counts come from.
    """

    prompt: str
    completion: str
    completion_token_count: int
    prompt_token_count: int
    total_token_count: int = 0
    event_id: str = ""

    def __post_init__(self) -> None:
        self.total_token_count = self.prompt_token_count + self.completion_token_count


def _usage_dict(raw: Any) -> Dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    usage = raw.get("usage") or raw.get("usage_metadata")
    if isinstance(usage, dict):
        return usage
    return raw  # Ollama reports prompt_eval_count / eval_count at the top level


def _first_int(d: Dict[str, Any], keys: Sequence[str]) -> Optional[int]:
    for key in keys:
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def get_tokens_from_response(response: Any) -> Tuple[Optional[int], Optional[int]]:
    """``(prompt tokens, completion tokens)`` the provider reported in ``response.raw``
    (``None`` for a number it did not report)."""
    usage = _usage_dict(getattr(response, "raw", None))
    return _first_int(usage, _PROMPT_KEYS), _first_int(usage, _COMPLETION_KEYS)


def _text_of(response: Any) -> str:
    if response is None:
        return ""
    message = getattr(response, "message", None)
    if message is not None:
        return str(getattr(message, "content", "") or "")
    return str(getattr(response, "text", response) or "")


class TokenCountingHandler(BaseCallbackHandler):
    """Counts prompt and completion tokens of LLM events and the tokens of embedded texts.

    Args:
        tokenizer: what to count with when the provider reports no usage; anything
            :func:`ragloom.tokenizers.get_tokenizer` takes (LlamaIndex's ``Callable[[str], list]``
            too).  Default ``None``: each model's own tokenizer (see the module docstring).
        event_starts_to_ignore, event_ends_to_ignore: see :class:`BaseCallbackHandler`
            (ignoring LLM or EMBEDDING ends stops that counting).
        verbose: print each event's counts to standard output (as LlamaIndex).

    Attributes:
        llm_token_counts: one :class:`TokenCountingEvent` per LLM call, in order of completion.
        embedding_token_counts: one per embedded text (``prompt`` is the text).

    Raises:
        ValueError: ``tokenizer`` is not usable as a tokenizer.

    An LLM call that raised counts nothing.  Counting is guarded by a lock (one handler can serve
    several threads).
    """

    def __init__(
        self,
        tokenizer: Any = None,
        event_starts_to_ignore: Optional[List[CBEventType]] = None,
        event_ends_to_ignore: Optional[List[CBEventType]] = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(event_starts_to_ignore=event_starts_to_ignore, event_ends_to_ignore=event_ends_to_ignore)
        self._tokenizer: Any = None
        if tokenizer is not None:
            from ragloom.tokenizers import get_tokenizer

            self._tokenizer = get_tokenizer(tokenizer)
        self._verbose = bool(verbose)
        self._lock = threading.Lock()
        self.llm_token_counts: List[TokenCountingEvent] = []
        self.embedding_token_counts: List[TokenCountingEvent] = []

    @property
    def tokenizer(self) -> Any:
        """The tokenizer given as ``tokenizer=`` (a ``BaseTokenizer``), or ``None``."""
        return self._tokenizer

    def _count(self, payload: Dict[Any, Any], text: str) -> int:
        """Tokens of ``text`` in ``tokenizer=``, else the payload's model tokenizer, else the default."""
        tok = self._tokenizer or payload.get(EventPayload.TOKENIZER)
        if tok is None:
            from ragloom.tokenizers import get_default_tokenizer

            tok = get_default_tokenizer()
        return int(tok.count(text))

    # -- events -------------------------------------------------------------------------------------
    def on_event_start(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: str = "",
        parent_id: str = "",
        **kwargs: Any,
    ) -> str:
        return event_id

    def on_event_end(
        self,
        event_type: CBEventType,
        payload: Optional[Dict[Any, Any]] = None,
        event_id: str = "",
        **kwargs: Any,
    ) -> None:
        if payload is None or EventPayload.EXCEPTION in payload:
            return
        if event_type == CBEventType.LLM:
            counts = self._llm_counts(payload, event_id)
            if counts is None:
                return
            with self._lock:
                self.llm_token_counts.append(counts)
            if self._verbose:
                print(f"LLM Prompt Token Usage: {counts.prompt_token_count}\n"
                      f"LLM Completion Token Usage: {counts.completion_token_count}", flush=True)
        elif event_type == CBEventType.EMBEDDING:
            events = [
                TokenCountingEvent(prompt=chunk, completion="", prompt_token_count=self._count(payload, chunk),
                                   completion_token_count=0, event_id=event_id)
                for chunk in payload.get(EventPayload.CHUNKS) or []
            ]
            with self._lock:
                self.embedding_token_counts.extend(events)
            if self._verbose:
                print(f"Embedding Token Usage: {sum(e.total_token_count for e in events)}", flush=True)

    def _llm_counts(self, payload: Dict[Any, Any], event_id: str) -> Optional[TokenCountingEvent]:
        if EventPayload.PROMPT in payload:
            prompt_parts = [str(payload.get(EventPayload.PROMPT) or "")]
            prompt = prompt_parts[0]
            response = payload.get(EventPayload.COMPLETION)
        elif EventPayload.MESSAGES in payload:
            messages = list(payload.get(EventPayload.MESSAGES) or [])
            prompt_parts = [str(getattr(m, "content", m) or "") for m in messages]
            prompt = "\n".join(str(m) for m in messages)
            response = payload.get(EventPayload.RESPONSE)
        else:
            return None
        completion = _text_of(response)
        reported_prompt, reported_completion = get_tokens_from_response(response)
        prompt_tokens = reported_prompt
        if prompt_tokens is None:
            prompt_tokens = sum(self._count(payload, part) for part in prompt_parts)
        completion_tokens = reported_completion
        if completion_tokens is None:
            completion_tokens = self._count(payload, completion)
        return TokenCountingEvent(prompt=prompt, completion=completion, prompt_token_count=prompt_tokens,
                                  completion_token_count=completion_tokens, event_id=event_id)

    def start_trace(self, trace_id: Optional[str] = None) -> None:
        return None

    def end_trace(self, trace_id: Optional[str] = None, trace_map: Optional[Dict[str, List[str]]] = None) -> None:
        return None

    # -- totals -------------------------------------------------------------------------------------
    @property
    def prompt_llm_token_count(self) -> int:
        """Prompt tokens of every counted LLM call."""
        return sum(e.prompt_token_count for e in self.llm_token_counts)

    @property
    def completion_llm_token_count(self) -> int:
        """Completion tokens of every counted LLM call."""
        return sum(e.completion_token_count for e in self.llm_token_counts)

    @property
    def total_llm_token_count(self) -> int:
        """Prompt plus completion tokens of every counted LLM call."""
        return sum(e.total_token_count for e in self.llm_token_counts)

    @property
    def total_embedding_token_count(self) -> int:
        """Tokens of every embedded text counted."""
        return sum(e.total_token_count for e in self.embedding_token_counts)

    def reset_counts(self) -> None:
        """Forget every count."""
        with self._lock:
            self.llm_token_counts = []
            self.embedding_token_counts = []
