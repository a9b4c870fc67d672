"""LLMs behind the OpenAI HTTP API: vLLM, llama.cpp's server, LM Studio, LocalAI, Ollama's
``/v1``, hosted OpenAI-compatible services (LlamaIndex: ``llama_index.llms.openai_like.OpenAILike``).

Chat models use ``POST {api_base}/chat/completions``, completion models
``POST {api_base}/completions``; streaming sends ``"stream": true`` and reads Server-Sent
Events (``data: {json}`` per piece, ``data: [DONE]`` at the end).  Needs the ``remote`` extra
(httpx + tenacity): ``pip install 'ragloom[remote]'``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence

from ragloom.llms.remote import RemoteLLM, Request
from ragloom.llms.types import ChatMessage
from ragloom.transport import BadResponse

__all__ = ["OpenAILike", "DEFAULT_OPENAI_API_BASE"]

DEFAULT_OPENAI_API_BASE = "https://api.openai.com/v1"
#: tokens reserved for the answer when ``max_tokens=None`` (LlamaIndex's default num_output)
DEFAULT_NUM_OUTPUT = 256
#: LlamaIndex arguments accepted (so ported code runs) and ignored: they have no effect here
_IGNORED_LLAMAINDEX_ARGS = frozenset({"is_function_calling_model", "reuse_client", "api_version"})


def _first_choice(data: Any) -> Dict[str, Any]:
    if not isinstance(data, dict):
        raise BadResponse(f"reply is not a JSON object but {type(data).__name__}")
    if "error" in data and data["error"]:
        err = data["error"]
        raise BadResponse(f"server error: {err.get('message', err) if isinstance(err, dict) else err}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse("reply has no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise BadResponse("choices[0] is not an object")
    return choice


def _stream_choice(event: Any) -> Optional[Dict[str, Any]]:
    if isinstance(event, dict) and event.get("error"):
        err = event["error"]
        raise BadResponse(f"server error in stream: {err.get('message', err) if isinstance(err, dict) else err}")
    choices = event.get("choices") if isinstance(event, dict) else None
    if not choices:  # e.g. the final usage-only event
        return None
    return choices[0]


class OpenAILike(RemoteLLM):
    """An LLM served over the OpenAI-compatible HTTP API.

    Args:
        model: model name as the server knows it.
        api_base: base URL up to and including ``/v1`` (e.g. ``http://localhost:8000/v1``);
            default ``$OPENAI_API_BASE``, else ``$OPENAI_BASE_URL``, else OpenAI's.
        api_key: sent as ``Authorization: Bearer``; default ``$OPENAI_API_KEY``; no header
            when neither is set (local servers).
        context_window: tokens the model accepts, prompt and answer together (default 3900,
            LlamaIndex's default; set it to your model's).
        max_tokens: most tokens generated per answer, sent as ``max_tokens`` and reported as
            ``metadata.num_output`` (default 256).  ``None`` sends no limit (the server's default
            applies) and reserves 256 tokens for the answer when prompts are packed.
        is_chat_model: ``True`` (default) uses ``/chat/completions``; ``False`` uses
            ``/completions``.  (LlamaIndex's OpenAILike defaults to ``False``; most servers
            today serve chat models.)
        temperature: sampling temperature in ``[0, 2]`` (default 0.0: most deterministic).
        timeout: seconds for connecting and between two bytes of the reply (default 60).
        max_retries: retries after the first attempt for 408/409/429/5xx, timeouts, connection
            errors and malformed replies (default 3).
        additional_kwargs: extra request fields sent every time (e.g. ``{"top_p": 0.9}``).
        default_headers: extra HTTP headers.
        system_prompt, tokenizer, retry_backoff_base, retry_backoff_max, max_retry_after,
        requests_per_minute: see :class:`~ragloom.llms.remote.RemoteLLM`.
        callback_manager: where its LLM events go (default: inherited, see :mod:`ragloom.callbacks.base`).
        **kwargs: only the LlamaIndex arguments ``is_function_calling_model``, ``reuse_client``
            and ``api_version``, accepted and ignored.

    Raises:
        TypeError: any other keyword argument.
        ValueError: an argument out of range.
        LLMProviderError: (from the calls) connection refused, HTTP 401 (bad key), 404 (unknown
            model or wrong ``api_base``), other 4xx, 5xx/429 after the retries, malformed JSON.
    """

    provider_name = "OpenAI-compatible"
    stream_framing = "sse"

    def __init__(
        self,
        model: str,
        api_base: Optional[str] = None,
        api_key: Optional[str] = None,
        context_window: int = 3900,
        max_tokens: Optional[int] = 256,
        is_chat_model: bool = True,
        temperature: float = 0.0,
        timeout: float = 60.0,
        max_retries: int = 3,
        additional_kwargs: Optional[Dict[str, Any]] = None,
        default_headers: Optional[Dict[str, str]] = None,
        system_prompt: Optional[str] = None,
        tokenizer: Any = None,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        requests_per_minute: Optional[float] = None,
        callback_manager: Any = None,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - _IGNORED_LLAMAINDEX_ARGS)
        if unknown:
            raise TypeError(f"OpenAILike got unexpected arguments: {unknown}")
        if not isinstance(temperature, (int, float)) or not 0.0 <= float(temperature) <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {temperature!r}")
        base = (
            api_base
            or os.environ.get("OPENAI_API_BASE")
            or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_OPENAI_API_BASE
        )
        if not base.startswith(("http://", "https://")):
            raise ValueError(f"api_base must be an http(s) URL, got {base!r}")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = dict(default_headers or {})
        if key:
            headers["Authorization"] = f"Bearer {key}"
        super().__init__(
            model=model,
            context_window=context_window,
            num_output=DEFAULT_NUM_OUTPUT if max_tokens is None else max_tokens,
            is_chat_model=is_chat_model,
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            system_prompt=system_prompt,
            tokenizer=tokenizer,
            retry_backoff_base=retry_backoff_base,
            retry_backoff_max=retry_backoff_max,
            max_retry_after=max_retry_after,
            requests_per_minute=requests_per_minute,
        )
        self.callback_manager = callback_manager
        self.api_base = base.rstrip("/")
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.additional_kwargs = dict(additional_kwargs or {})

    # -- requests -------------------------------------------------------------------------
    def _payload(self, stream: bool, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        payload: Dict[str, Any] = {"model": self.model, "temperature": self.temperature}
        if self.max_tokens is not None:
            payload["max_tokens"] = self.max_tokens
        payload.update(self.additional_kwargs)
        payload.update(kwargs)
        if stream:
            payload["stream"] = True
        else:
            payload.pop("stream", None)
        return payload

    def _chat_request(self, messages: Sequence[ChatMessage], stream: bool, **kwargs: Any) -> Request:
        payload = self._payload(stream, kwargs)
        payload["messages"] = self._message_dicts(messages)
        return f"{self.api_base}/chat/completions", payload

    def _complete_request(self, prompt: str, formatted: bool, stream: bool, **kwargs: Any) -> Request:
        payload = self._payload(stream, kwargs)
        payload["prompt"] = prompt
        return f"{self.api_base}/completions", payload

    # -- replies ------------------------------------------------------------------------------
    def _parse_chat(self, data: Any) -> str:
        message = _first_choice(data).get("message")
        if not isinstance(message, dict):
            raise BadResponse("choices[0] has no message")
        content = message.get("content")
        return content if isinstance(content, str) else ""

    def _parse_complete(self, data: Any) -> str:
        text = _first_choice(data).get("text")
        if not isinstance(text, str):
            raise BadResponse("choices[0] has no text")
        return text

    def _chat_delta(self, event: Any) -> Optional[str]:
        choice = _stream_choice(event)
        if choice is None:
            return None
        content = (choice.get("delta") or {}).get("content")
        return content if isinstance(content, str) else None

    def _complete_delta(self, event: Any) -> Optional[str]:
        choice = _stream_choice(event)
        if choice is None:
            return None
        text = choice.get("text")
        return text if isinstance(text, str) else None
