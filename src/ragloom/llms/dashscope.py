"""Qwen models on Alibaba Cloud Model Studio (DashScope), LlamaIndex: ``llama_index.llms.dashscope.DashScope``.

ragloom calls DashScope's OpenAI-compatible endpoint (``POST
https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions``) through
:class:`~ragloom.llms.openai_like.OpenAILike` and the shared transport, instead of the ``dashscope``
SDK LlamaIndex uses: no SDK to install, the same retries, streaming and errors as every other HTTP
provider.  The key comes from ``$DASHSCOPE_API_KEY`` (never from ``$OPENAI_API_KEY``).  Outside
mainland China use :data:`DASHSCOPE_INTL_API_BASE` (Singapore) as ``api_base``.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Dict, Optional
from urllib.parse import urlparse

from ragloom.llms.openai_like import OpenAILike

logger = logging.getLogger(__name__)

__all__ = [
    "DashScope",
    "DashScopeGenerationModels",
    "DASHSCOPE_MODEL_CONTEXT_WINDOWS",
    "DASHSCOPE_API_BASE",
    "DASHSCOPE_INTL_API_BASE",
    "DEFAULT_CONTEXT_WINDOW",
    "dashscope_context_window",
]

#: DashScope's OpenAI-compatible endpoint, China (Beijing) region.
DASHSCOPE_API_BASE = "https://dashscope.aliyuncs.com/compatible-mode/v1"
#: The same in the international (Singapore) region; its keys are different.
DASHSCOPE_INTL_API_BASE = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
#: Context window assumed for a model :data:`DASHSCOPE_MODEL_CONTEXT_WINDOWS` does not know
#: (LlamaIndex's default context window; a warning names ``context_window=``).
DEFAULT_CONTEXT_WINDOW = 3900
#: LlamaIndex's defaults for ``DashScope``.
DEFAULT_NUM_OUTPUT = 256
DEFAULT_TEMPERATURE = 0.1


class DashScopeGenerationModels:
    """Model names, as LlamaIndex's ``DashScopeGenerationModels`` lists them."""

    QWEN_TURBO = "qwen-turbo"
    QWEN_PLUS = "qwen-plus"
    QWEN_MAX = "qwen-max"
    QWEN_MAX_1201 = "qwen-max-1201"
    QWEN_MAX_LONGCONTEXT = "qwen-max-longcontext"


#: ``model -> context window`` (tokens, prompt and answer together).  qwen-turbo, qwen-plus and
#: qwen-max: Model Studio's model pages (2025: 131,072 / 131,072 / 32,768); the two legacy names:
#: LlamaIndex's table (8 × 1024 and 30 × 1024).  ``-latest`` and ``-YYYY-MM-DD`` variants take
#: their base model's window, which for the newer snapshots is a lower bound (safe: prompts fit).
DASHSCOPE_MODEL_CONTEXT_WINDOWS: Dict[str, int] = {
    DashScopeGenerationModels.QWEN_TURBO: 131_072,
    DashScopeGenerationModels.QWEN_PLUS: 131_072,
    DashScopeGenerationModels.QWEN_MAX: 32_768,
    DashScopeGenerationModels.QWEN_MAX_1201: 8_192,
    DashScopeGenerationModels.QWEN_MAX_LONGCONTEXT: 30_720,
}
_VARIANT = re.compile(r"^(.*?)-(latest|\d{4}-\d{2}-\d{2}|\d{4})$")


def dashscope_context_window(model_name: str) -> Optional[int]:
    """The context window of a DashScope model (exact name, then without ``-latest`` or a date), or ``None``."""
    if model_name in DASHSCOPE_MODEL_CONTEXT_WINDOWS:
        return DASHSCOPE_MODEL_CONTEXT_WINDOWS[model_name]
    m = _VARIANT.match(model_name)
    return DASHSCOPE_MODEL_CONTEXT_WINDOWS.get(m.group(1)) if m else None


def is_dashscope_host(api_base: str) -> bool:
    """Whether ``api_base`` is one of DashScope's own hosts (``*.aliyuncs.com``)."""
    return (urlparse(api_base).hostname or "").endswith(".aliyuncs.com")


class DashScope(OpenAILike):
    """A Qwen model on DashScope, through its OpenAI-compatible API (chat models only).

    Args (LlamaIndex's names and defaults):
        model_name: e.g. ``DashScopeGenerationModels.QWEN_MAX`` (the default), ``"qwen-plus"``.
        max_tokens: most tokens per answer (default 256); ``None`` sends no limit.
        incremental_output: accepted for LlamaIndex compatibility; the compatible API always
            streams increments, so it has no effect.
        enable_search: let the model consult DashScope's web search (sent as ``enable_search``).
        stop: stop strings (sent as ``stop``).
        temperature: in ``[0, 2]`` (default 0.1).
        top_k, top_p, seed (default 1234), repetition_penalty: sampling, sent when set
            (``top_k`` and ``repetition_penalty`` are DashScope extensions of the API).
        api_key: default ``$DASHSCOPE_API_KEY``; required for DashScope's own hosts.
        context_window: tokens the model accepts; default :data:`DASHSCOPE_MODEL_CONTEXT_WINDOWS`,
            else 3900 (LlamaIndex's default for every model) with a warning.
        api_base: default :data:`DASHSCOPE_API_BASE` (ragloom addition; e.g. the international endpoint).
        additional_kwargs: more request fields (ragloom addition).
        callback_manager, timeout, max_retries, tokenizer and the other
            :class:`~ragloom.llms.openai_like.OpenAILike` arguments.  Prompts are counted in
            ``cl100k_base`` unless ``tokenizer=`` is given: it makes more tokens of Chinese text
            than Qwen's tokenizer, so budgets err on the safe side.
        **kwargs: LlamaIndex's ``is_function_calling_model`` (accepted, no effect).

    Raises:
        ValueError: no API key for a DashScope host; an argument out of range.
        LLMProviderError: (from the calls) see :class:`OpenAILike` (e.g. 401 for a wrong key,
            404 for an unknown model).
    """

    provider_name = "DashScope"

    def __init__(
        self,
        model_name: str = DashScopeGenerationModels.QWEN_MAX,
        max_tokens: Optional[int] = DEFAULT_NUM_OUTPUT,
        incremental_output: Optional[bool] = True,
        enable_search: Optional[bool] = False,
        stop: Optional[Any] = None,
        temperature: float = DEFAULT_TEMPERATURE,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        seed: Optional[int] = 1234,
        api_key: Optional[str] = None,
        context_window: Optional[int] = None,
        repetition_penalty: Optional[float] = None,
        api_base: str = DASHSCOPE_API_BASE,
        additional_kwargs: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise ValueError(f"model_name must be a non-empty DashScope model name, got {model_name!r}")
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an int >= 0 or None, got {seed!r}")
        key = api_key if api_key is not None else os.environ.get("DASHSCOPE_API_KEY", "")
        if not key and is_dashscope_host(api_base):
            raise ValueError("DashScope needs an API key: pass api_key= or set DASHSCOPE_API_KEY")
        if context_window is None:
            context_window = dashscope_context_window(model_name)
            if context_window is None:
                logger.warning("no known context window for DashScope model %r; assuming %d tokens "
                               "(pass context_window= to set it)", model_name, DEFAULT_CONTEXT_WINDOW)
                context_window = DEFAULT_CONTEXT_WINDOW
        extra: Dict[str, Any] = {}
        for name, value in (("stop", stop), ("top_k", top_k), ("top_p", top_p), ("seed", seed),
                            ("repetition_penalty", repetition_penalty)):
            if value is not None:
                extra[name] = value
        if enable_search:
            extra["enable_search"] = True
        extra.update(additional_kwargs or {})
        kwargs.pop("is_function_calling_model", None)
        super().__init__(
            model=model_name,
            api_base=api_base,
            api_key=key,  # "" (no header) rather than None, which would read $OPENAI_API_KEY
            context_window=context_window,
            max_tokens=max_tokens,
            is_chat_model=True,
            temperature=temperature,
            additional_kwargs=extra,
            **kwargs,
        )
        self.incremental_output = incremental_output
        self.enable_search = bool(enable_search)

    @property
    def model_name(self) -> str:
        """The DashScope model name (LlamaIndex's attribute; ``model`` holds the same)."""
        return self.model
