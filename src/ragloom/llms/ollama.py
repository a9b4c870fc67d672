"""LLMs served by Ollama (LlamaIndex: ``llama_index.llms.ollama.Ollama``).

``chat`` uses ``POST /api/chat`` and ``complete`` uses ``POST /api/generate`` (``raw: true``
when the prompt is already formatted).  Ollama streams by default, as newline-delimited
JSON; non-streaming calls send ``"stream": false``.  The context window, when not given, is
read once from ``POST /api/show`` (see :meth:`Ollama._resolve`) and sent as
``options.num_ctx`` with every request, so the server does not silently cut the prompt to
its own default context.  Needs the ``remote`` extra: ``pip install 'ragloom[remote]'``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, Optional, Sequence

from ragloom.embeddings.ollama import DEFAULT_OLLAMA_BASE_URL, parse_ollama_show
from ragloom.llms.remote import LLMProviderError, RemoteLLM, Request
from ragloom.llms.types import ChatMessage
from ragloom.transport import BadResponse

logger = logging.getLogger(__name__)

__all__ = ["Ollama", "DEFAULT_OLLAMA_BASE_URL", "DEFAULT_MAX_CONTEXT_WINDOW", "FALLBACK_CONTEXT_WINDOW"]

#: Upper bound on a context window read from the server: Ollama allocates its KV cache for
#: ``num_ctx`` tokens, and many models report 128k, far more memory than a local answer needs.
DEFAULT_MAX_CONTEXT_WINDOW = 8192
#: Used when ``/api/show`` cannot tell (LlamaIndex's default context window).
FALLBACK_CONTEXT_WINDOW = 3900


def _check_error(data: Any) -> Dict[str, Any]:
    if not isinstance(data, dict):
        raise BadResponse(f"reply is not a JSON object but {type(data).__name__}")
    if data.get("error"):
        raise BadResponse(f"server error: {data['error']}")
    return data


class Ollama(RemoteLLM):
    """An LLM served by a local or remote Ollama server.

    Args:
        model: e.g. ``"llama3.2"``, ``"qwen2.5:7b"`` (must be pulled on the server).
        base_url: the server (default ``http://localhost:11434``).
        temperature: sampling temperature in ``[0, 2]``, sent as ``options.temperature``;
            ``None`` (default) keeps the model's own default.
        context_window: tokens the model runs with, prompt and answer together; sent as
            ``options.num_ctx``.  ``None`` or ``-1`` (default): read from ``/api/show`` — the
            model's trained length, or its Modelfile ``num_ctx`` if smaller — capped at
            ``max_context_window``; if the server cannot tell, 3900.
        max_context_window: the cap above (default 8192 tokens; it bounds server memory).
        num_output: tokens reserved for the answer, sent as ``options.num_predict`` (default 256).
        request_timeout: seconds for connecting and between two bytes of the reply (default
            120: the first request may wait while the server loads the model).
        max_retries: retries after the first attempt (default 3).
        json_mode: ask for a JSON answer (``"format": "json"``).
        keep_alive: how long the server keeps the model loaded (e.g. ``"5m"``).
        additional_kwargs: more model ``options`` (e.g. ``{"top_k": 20}``).
        is_chat_model: reported in ``metadata`` (default ``True``; both endpoints are native).
        system_prompt, tokenizer: see :class:`~ragloom.llms.remote.RemoteLLM`.
        callback_manager: where its LLM events go (default: inherited, see :mod:`ragloom.callbacks.base`).

    Per-call ``kwargs`` of ``complete``/``chat`` are sent as model ``options``.

    Raises:
        ValueError: an argument out of range; ``callback_manager`` not a ``CallbackManager``.
        LLMProviderError: (from the calls) server not running, model not pulled (HTTP 404),
            5xx after the retries, malformed replies.
    """

    provider_name = "Ollama"
    stream_framing = "ndjson"

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_OLLAMA_BASE_URL,
        temperature: Optional[float] = None,
        context_window: Optional[int] = None,
        request_timeout: float = 120.0,
        num_output: int = 256,
        max_retries: int = 3,
        json_mode: bool = False,
        keep_alive: Optional[str] = None,
        additional_kwargs: Optional[Dict[str, Any]] = None,
        is_chat_model: bool = True,
        max_context_window: int = DEFAULT_MAX_CONTEXT_WINDOW,
        system_prompt: Optional[str] = None,
        tokenizer: Any = None,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        callback_manager: Any = None,
    ) -> None:
        if temperature is not None and (not isinstance(temperature, (int, float)) or not 0.0 <= temperature <= 2.0):
            raise ValueError(f"temperature must be None or in [0, 2], got {temperature!r}")
        if context_window == -1:
            context_window = None
        if context_window is not None and (not isinstance(context_window, int) or context_window < 1):
            raise ValueError(f"context_window must be None, -1 or an int >= 1 (tokens), got {context_window!r}")
        if not isinstance(max_context_window, int) or max_context_window < 1:
            raise ValueError(f"max_context_window must be an int >= 1 (tokens), got {max_context_window!r}")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        super().__init__(
            model=model,
            context_window=context_window or FALLBACK_CONTEXT_WINDOW,
            num_output=num_output,
            is_chat_model=is_chat_model,
            timeout=request_timeout,
            max_retries=max_retries,
            system_prompt=system_prompt,
            tokenizer=tokenizer,
            retry_backoff_base=retry_backoff_base,
            retry_backoff_max=retry_backoff_max,
        )
        self.callback_manager = callback_manager
        self.base_url = base_url.rstrip("/")
        self.temperature = temperature
        self.json_mode = json_mode
        self.keep_alive = keep_alive
        self.additional_kwargs = dict(additional_kwargs or {})
        self.max_context_window = max_context_window
        self._resolved = context_window is not None
        self._resolve_lock = threading.Lock()

    # -- context window -----------------------------------------------------------------
    def _resolve(self) -> None:
        """Read the context window from ``/api/show`` once (when it was not given)."""
        if self._resolved:
            return
        with self._resolve_lock:
            if self._resolved:
                return
            try:
                info = self.transport.post(
                    f"{self.base_url}/api/show", {"model": self.model}, parse_ollama_show, attempts=2
                )
            except LLMProviderError as exc:
                if exc.status == 404:  # the model is not there: a request would fail the same way
                    raise
                logger.warning(
                    "could not read %r's context length from %s: %s; assuming %d tokens",
                    self.model,
                    self.base_url,
                    exc,
                    FALLBACK_CONTEXT_WINDOW,
                )
                info = None
            sizes = [n for n in ((info.context_length, info.num_ctx) if info else ()) if n]
            if sizes:
                self.context_window = min(min(sizes), self.max_context_window)
            logger.debug("Ollama model %r: context window %d tokens", self.model, self.context_window)
            self._resolved = True

    @property
    def metadata(self) -> Any:
        """As :class:`~ragloom.llms.remote.RemoteLLM`; asks the server for the context window first when needed."""
        self._resolve()
        return super().metadata

    # -- requests -----------------------------------------------------------------------
    def _payload(self, stream: bool, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        options: Dict[str, Any] = {"num_ctx": self.context_window, "num_predict": self.num_output}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        options.update(self.additional_kwargs)
        options.update(kwargs)
        payload: Dict[str, Any] = {"model": self.model, "stream": stream, "options": options}
        if self.json_mode:
            payload["format"] = "json"
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        return payload

    def _native_chat(self) -> bool:
        return True

    def _native_complete(self) -> bool:
        return True

    def _chat_request(self, messages: Sequence[ChatMessage], stream: bool, **kwargs: Any) -> Request:
        payload = self._payload(stream, kwargs)
        payload["messages"] = self._message_dicts(messages)
        return f"{self.base_url}/api/chat", payload

    def _complete_request(self, prompt: str, formatted: bool, stream: bool, **kwargs: Any) -> Request:
        payload = self._payload(stream, kwargs)
        payload["prompt"] = prompt
        if formatted:
            payload["raw"] = True
        return f"{self.base_url}/api/generate", payload

    # -- replies --------------------------------------------------------------------------
    def _parse_chat(self, data: Any) -> str:
        message = _check_error(data).get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content", ""), str):
            raise BadResponse("reply has no message")
        return message.get("content") or ""

    def _parse_complete(self, data: Any) -> str:
        text = _check_error(data).get("response")
        if not isinstance(text, str):
            raise BadResponse("reply has no response text")
        return text

    def _chat_delta(self, event: Any) -> Optional[str]:
        content = (_check_error(event).get("message") or {}).get("content")
        return content if isinstance(content, str) else None

    def _complete_delta(self, event: Any) -> Optional[str]:
        text = _check_error(event).get("response")
        return text if isinstance(text, str) else None
