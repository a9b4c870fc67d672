"""OpenAI's own models over its HTTP API (LlamaIndex: ``llama_index.llms.openai.OpenAI``).

:class:`OpenAI` is :class:`~ragloom.llms.openai_like.OpenAILike` with what is known about OpenAI's
models filled in: the base URL (``https://api.openai.com/v1``), the key from ``$OPENAI_API_KEY``,
each model's context window and whether it is a chat model (:data:`OPENAI_MODELS`), and its
tokenizer (``o200k_base`` or ``cl100k_base``, so prompt budgets are counted exactly).  Requests go
through the shared transport (:mod:`ragloom.transport`): retries of 408/409/429/5xx with
``Retry-After``, timeouts, clear :class:`~ragloom.llms.remote.LLMProviderError` messages.
Needs the ``remote`` extra (httpx + tenacity).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlparse

from ragloom.llms.openai_like import OpenAILike

__all__ = ["OpenAI", "OPENAI_MODELS", "DEFAULT_OPENAI_MODEL", "openai_model_info"]

#: LlamaIndex's default model for ``OpenAI()``.
DEFAULT_OPENAI_MODEL = "gpt-3.5-turbo"
#: LlamaIndex's default sampling temperature.
DEFAULT_TEMPERATURE = 0.1

#: ``model -> (context window in tokens, prompt and answer together; is a chat model)``.
#: Facts from OpenAI's model pages (platform.openai.com/docs/models); a dated snapshot
#: (``gpt-4o-2024-08-06``) and a fine-tuned model (``ft:gpt-4o-mini-2024-07-18:org::id``) take the
#: entry of their base model (:func:`openai_model_info`).
OPENAI_MODELS: Dict[str, Tuple[int, bool]] = {
    # GPT-3.5
    "gpt-3.5-turbo": (16_385, True),
    "gpt-3.5-turbo-0125": (16_385, True),
    "gpt-3.5-turbo-1106": (16_385, True),
    "gpt-3.5-turbo-16k": (16_385, True),
    "gpt-3.5-turbo-0613": (4_096, True),
    "gpt-3.5-turbo-16k-0613": (16_385, True),
    "gpt-3.5-turbo-instruct": (4_096, False),
    "davinci-002": (16_384, False),
    "babbage-002": (16_384, False),
    # GPT-4
    "gpt-4": (8_192, True),
    "gpt-4-0613": (8_192, True),
    "gpt-4-32k": (32_768, True),
    "gpt-4-32k-0613": (32_768, True),
    "gpt-4-turbo": (128_000, True),
    "gpt-4-turbo-preview": (128_000, True),
    "gpt-4-1106-preview": (128_000, True),
    "gpt-4-0125-preview": (128_000, True),
    "gpt-4-vision-preview": (128_000, True),
    "gpt-4o": (128_000, True),
    "gpt-4o-mini": (128_000, True),
    "chatgpt-4o-latest": (128_000, True),
    "gpt-4o-audio-preview": (128_000, True),
    "gpt-4o-mini-audio-preview": (128_000, True),
    "gpt-4.5-preview": (128_000, True),
    "gpt-4.1": (1_047_576, True),
    "gpt-4.1-mini": (1_047_576, True),
    "gpt-4.1-nano": (1_047_576, True),
    # reasoning models (see _REASONING)
    "o1": (200_000, True),
    "o1-preview": (128_000, True),
    "o1-mini": (128_000, True),
    "o3": (200_000, True),
    "o3-mini": (200_000, True),
    "o4-mini": (200_000, True),
    "gpt-5": (400_000, True),
    "gpt-5-mini": (400_000, True),
    "gpt-5-nano": (400_000, True),
    "gpt-5-chat-latest": (128_000, True),
    "gpt-5.1": (400_000, True),
    "gpt-5.1-chat-latest": (128_000, True),
    "gpt-5.2": (400_000, True),
    "gpt-5.2-chat-latest": (128_000, True),
}

#: Reasoning models: they take ``max_completion_tokens`` instead of ``max_tokens`` and only their
#: default temperature (OpenAI's reasoning guide).  ``gpt-5*-chat-latest`` are not among them.
_REASONING = re.compile(r"^(o1|o3|o4|gpt-5)(\.\d+)?(-(mini|nano|preview|pro))?$")
_DATED = re.compile(r"^(.*?)-(\d{4}-\d{2}-\d{2})$")


def _base_model(model: str) -> str:
    """``ft:gpt-4o-mini-2024-07-18:org::id`` → ``gpt-4o-mini-2024-07-18``; legacy ``model:ft-...`` → ``model``."""
    if model.startswith("ft:"):
        return model.split(":")[1]
    if ":ft-" in model:
        return model.split(":")[0]
    return model


def openai_model_info(model: str) -> Optional[Tuple[str, int, bool]]:
    """``(table name, context window, is chat model)`` of an OpenAI model, or ``None`` if unknown.

    Looks up the exact name, then the base model of a fine-tuned one, then the name without a
    ``-YYYY-MM-DD`` snapshot date."""
    base = _base_model(model)
    for name in (model, base, (_DATED.match(base) or [None, base])[1]):
        if name in OPENAI_MODELS:
            window, chat = OPENAI_MODELS[name]
            return name, window, chat
    return None


class OpenAI(OpenAILike):
    """An OpenAI model (``chat/completions``, or ``completions`` for the instruct models).

    Args:
        model: an OpenAI model name (default ``"gpt-3.5-turbo"``, LlamaIndex's); dated snapshots
            and ``ft:`` fine-tuned names are accepted (see :func:`openai_model_info`).
        temperature: in ``[0, 2]`` (default 0.1, LlamaIndex's).  Reasoning models (o1, o3, o4-mini,
            gpt-5 …) are sent no temperature (they take only their default) and report 1.0.
        max_tokens: most tokens per answer (``None``, the default: the server's limit; 256 tokens
            are then reserved for the answer when prompts are packed).  Reasoning models get it
            as ``max_completion_tokens``.
        additional_kwargs: extra request fields sent every time (e.g. ``{"top_p": 0.9}``).
        max_retries: retries after the first attempt (default 3).
        timeout: seconds for connecting and between two bytes of the reply (default 60).
        api_key: default ``$OPENAI_API_KEY``; required for api.openai.com.
        api_base: default ``$OPENAI_API_BASE``, else ``$OPENAI_BASE_URL``, else
            ``https://api.openai.com/v1`` (a proxy or Azure-style gateway speaking OpenAI's API).
        context_window: tokens the model accepts; default: :data:`OPENAI_MODELS`.  Give it for a
            model the table does not know.
        callback_manager, default_headers, system_prompt, tokenizer, retry_backoff_base,
        retry_backoff_max, max_retry_after, requests_per_minute: as
            :class:`~ragloom.llms.openai_like.OpenAILike` (``tokenizer`` defaults to the model's
            own encoding).
        **kwargs: the LlamaIndex arguments ``reuse_client`` and ``api_version`` (accepted, no
            effect), or any other :class:`OpenAILike` argument.

    Raises:
        ValueError: an unknown model name without ``context_window=`` (the message lists what to
            do; LlamaIndex raises the same on first use, ragloom at construction); no API key for
            api.openai.com; an argument out of range.
        LLMProviderError: (from the calls) see :class:`OpenAILike`.
    """

    provider_name = "OpenAI"

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_MODEL,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: Optional[int] = None,
        additional_kwargs: Optional[Dict[str, Any]] = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        api_key: Optional[str] = None,
        api_base: Optional[str] = None,
        context_window: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty OpenAI model name, got {model!r}")
        info = openai_model_info(model)
        if info is None and context_window is None:
            raise ValueError(
                f"unknown OpenAI model {model!r}: pass context_window= (tokens) for it, use one of "
                f"{sorted(OPENAI_MODELS)}, or use OpenAILike for a model served by another OpenAI-compatible server"
            )
        base = info[0] if info is not None else _base_model(model)
        is_chat = info[2] if info is not None else True
        self.reasoning = bool(_REASONING.match(_DATED.sub(r"\1", base)))
        if "tokenizer" not in kwargs or kwargs["tokenizer"] is None:
            kwargs["tokenizer"] = base if info is not None else None
        super().__init__(
            model=model,
            api_base=api_base,
            api_key=api_key,
            context_window=context_window if context_window is not None else info[1],  # type: ignore[index]
            max_tokens=max_tokens,
            is_chat_model=is_chat,
            temperature=1.0 if self.reasoning else temperature,
            timeout=timeout,
            max_retries=max_retries,
            additional_kwargs=additional_kwargs,
            **kwargs,
        )
        if not self.transport.headers.get("Authorization") and _is_openai_host(self.api_base):
            raise ValueError("OpenAI needs an API key for api.openai.com: pass api_key= or set OPENAI_API_KEY")

    def _payload(self, stream: bool, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        payload = super()._payload(stream, kwargs)
        if self.reasoning:
            payload.pop("temperature", None)
            if "max_tokens" in payload:
                payload.setdefault("max_completion_tokens", payload.pop("max_tokens"))
        return payload


def _is_openai_host(api_base: str) -> bool:
    host = urlparse(api_base).hostname or ""
    return host == "api.openai.com" or host.endswith(".api.openai.com")

