"""Synthesizer behaviour that needs no server: an in-test completion model that records prompts.

(The must-pass call-count tests against a real HTTP server are in ``test_modes_http.py``.)
"""

import asyncio
import io
import threading
import time

import pytest

from ragloom import PromptTemplate, Settings, get_response_synthesizer
from ragloom.base.response import AsyncStreamingResponse, Response, StreamingResponse
from ragloom.llms import CompletionResponse, CustomLLM, LLMMetadata
from ragloom.response_synthesizers import ResponseMode, TreeSummarize
from ragloom.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode


class RecordingLLM(CustomLLM):
    """Answers ``answer(prompt)``, records every prompt; ``delay`` seconds per call; tracks concurrency."""

    def __init__(self, answer=lambda p: "ok", context_window=1000, num_output=50, delay=0.0):
        self.answer = answer
        self.prompts = []
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._meta = LLMMetadata(context_window=context_window, num_output=num_output, model_name="rec")

    @property
    def metadata(self):
        return self._meta

    def complete(self, prompt, formatted=False, **kwargs):
        with self._lock:
            self.prompts.append(prompt)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            return CompletionResponse(text=self.answer(prompt))
        finally:
            with self._lock:
                self.active -= 1

    def stream_complete(self, prompt, formatted=False, **kwargs):
        text = self.complete(prompt).text
        so_far = ""
        for word in text.split(" "):
            piece = word if not so_far else " " + word
            so_far += piece
            yield CompletionResponse(text=so_far, delta=piece)


def _nodes(n=4, words=30):
    return [
        NodeWithScore(node=TextNode(text=" ".join(f"n{i}w{j}" for j in range(words))), score=1.0 - i / 10)
        for i in range(n)
    ]


def test_no_llm_configured_error_lists_the_options(monkeypatch):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    assert Settings.llm is None
    with pytest.raises(ValueError) as err:
        get_response_synthesizer(response_mode="compact")
    msg = str(err.value)
    for option in ("Settings.llm", "OpenAILike", "ragloom[llm]", "no_text"):
        assert option in msg
    # modes without an LLM call need none
    r = get_response_synthesizer(response_mode="no_text").synthesize("q", _nodes(2))
    assert r.response == "" and len(r.source_nodes) == 2


def test_settings_llm_is_used_when_no_llm_given():
    llm = RecordingLLM(answer=lambda p: "from settings")
    Settings.llm = llm
    r = get_response_synthesizer(response_mode="simple_summarize").synthesize("q", _nodes(2))
    assert r.response == "from settings" and len(llm.prompts) == 1


def test_unknown_mode_and_bad_templates():
    llm = RecordingLLM()
    with pytest.raises(ValueError, match="response_mode must be one of .*compact"):
        get_response_synthesizer(llm=llm, response_mode="summarize_everything")
    with pytest.raises(ValueError, match="text_qa_template .*context_str"):
        get_response_synthesizer(llm=llm, text_qa_template="Question: {query_str}")
    with pytest.raises(ValueError, match="refine_template .*context_msg"):
        get_response_synthesizer(llm=llm, response_mode="refine", refine_template="{existing_answer}")
    with pytest.raises(ValueError, match="streaming"):
        get_response_synthesizer(llm=llm, response_mode="accumulate", streaming=True)
    assert [m.value for m in ResponseMode] == [
        "refine", "compact", "simple_summarize", "tree_summarize", "generation",
        "no_text", "context_only", "accumulate", "compact_accumulate",
    ]


def test_empty_nodes_give_empty_response_without_calls():
    llm = RecordingLLM()
    for mode in ("compact", "refine", "tree_summarize", "simple_summarize", "accumulate"):
        r = get_response_synthesizer(llm=llm, response_mode=mode).synthesize("q", [])
        assert isinstance(r, Response) and r.response == "Empty Response" and r.source_nodes == []
    r = get_response_synthesizer(llm=llm, streaming=True).synthesize("q", [])
    assert isinstance(r, StreamingResponse) and str(r) == "Empty Response"
    assert llm.prompts == []


def test_node_text_is_fed_with_llm_metadata_mode():
    node = TextNode(
        text="Green tea wants 80 degree water.",
        metadata={"file_name": "tea.md", "secret": "s3cr3t"},
        excluded_llm_metadata_keys=["secret"],
    )
    llm = RecordingLLM()
    r = get_response_synthesizer(llm=llm, response_mode="simple_summarize").synthesize("q", [node])
    (prompt,) = llm.prompts
    assert node.get_content(MetadataMode.LLM) in prompt
    assert "file_name: tea.md" in prompt and "s3cr3t" not in prompt
    # bare nodes are wrapped; metadata maps node id -> node metadata
    assert r.source_nodes[0].node is node and r.metadata == {node.node_id: node.metadata}


def test_custom_template_as_string_and_query_bundle():
    llm = RecordingLLM()
    synth = get_response_synthesizer(
        llm=llm, response_mode="compact", text_qa_template="CTX<{context_str}> Q<{query_str}>"
    )
    synth.synthesize(QueryBundle(query_str="why?"), _nodes(1, 5))
    assert llm.prompts == ["CTX<" + " ".join(f"n0w{j}" for j in range(5)) + "> Q<why?>"]


def test_streaming_streams_only_the_final_call():
    answers = iter(["first answer", "second answer", "final answer here"])
    llm = RecordingLLM(answer=lambda p: next(answers), context_window=200, num_output=20)
    synth = get_response_synthesizer(llm=llm, response_mode="refine", streaming=True)
    r = synth.synthesize("q", _nodes(3, 20))
    assert isinstance(r, StreamingResponse)
    assert len(llm.prompts) == 2  # the final call waits for the consumer
    deltas = list(r.response_gen)
    assert deltas == ["final", " answer", " here"] and len(llm.prompts) == 3
    assert "second answer" in llm.prompts[2]
    assert r.get_response().response == "final answer here"  # kept after consumption


def test_print_response_stream_writes_deltas():
    llm = RecordingLLM(answer=lambda p: "one two three")
    r = get_response_synthesizer(llm=llm, streaming=True).synthesize("q", _nodes(1, 5))
    out = io.StringIO()
    r.print_response_stream(file=out)
    assert out.getvalue() == "one two three\n" and str(r) == "one two three"


def test_async_synthesize_and_async_streaming():
    llm = RecordingLLM(answer=lambda p: "async answer")
    r = asyncio.run(get_response_synthesizer(llm=llm, response_mode="refine").asynthesize("q", _nodes(2, 5)))
    assert r.response == "async answer" and len(llm.prompts) == 2
    r = asyncio.run(get_response_synthesizer(llm=llm, streaming=True).asynthesize("q", _nodes(2, 5)))
    assert isinstance(r, AsyncStreamingResponse)
    assert asyncio.run(r.get_response()).response == "async answer"


def test_tree_summarize_use_async_runs_a_level_concurrently():
    llm = RecordingLLM(answer=lambda p: "short", context_window=150, num_output=10, delay=0.3)
    synth = TreeSummarize(llm=llm, use_async=True)
    r = synth.synthesize("q", _nodes(4, 60))
    leaves = len(llm.prompts) - 1
    assert leaves >= 3 and llm.max_active >= 2  # calls overlapped (max_active), whatever the wall time
    assert r.response == "short"


def test_tree_summarize_use_async_inside_a_running_event_loop():
    llm = RecordingLLM(answer=lambda p: "short", context_window=150, num_output=10)

    async def main():
        return TreeSummarize(llm=llm, use_async=True).synthesize("q", _nodes(4, 60))

    assert asyncio.run(main()).response == "short"


def test_tree_summarize_terminates_when_answers_do_not_shrink():
    """An LLM that echoes its input would make tree summarization recurse forever; it is cut instead."""
    llm = RecordingLLM(answer=lambda p: p, context_window=300, num_output=20)
    r = TreeSummarize(llm=llm).synthesize("q", _nodes(6, 80))
    assert len(llm.prompts) < 30 and r.response
    tok = llm.get_tokenizer()
    assert all(tok.count(p) <= 300 - 20 for p in llm.prompts)


def test_prompts_are_listed_and_updated_through_the_query_engine_keys():
    llm = RecordingLLM()
    synth = get_response_synthesizer(llm=llm, response_mode="refine")
    assert set(synth.get_prompts()) == {"text_qa_template", "refine_template"}
    synth.update_prompts({"text_qa_template": PromptTemplate("ONLY {context_str}")})
    synth.synthesize("q", _nodes(1, 3))
    assert llm.prompts == ["ONLY n0w0 n0w1 n0w2"]
    with pytest.raises(ValueError, match="unknown prompt key"):
        synth.update_prompts({"summary_template": "x {context_str}"})


def test_accumulate_format_and_context_only_and_generation():
    counter = iter(range(100))
    llm = RecordingLLM(answer=lambda p: f"a{next(counter)}")
    r = get_response_synthesizer(llm=llm, response_mode="accumulate").synthesize("q", _nodes(3, 5))
    assert r.response == "Response 1: a0\n---------------------\nResponse 2: a1\n---------------------\nResponse 3: a2"
    r = get_response_synthesizer(response_mode="context_only").synthesize("q", _nodes(2, 3))
    assert r.response == "n0w0 n0w1 n0w2\n\nn1w0 n1w1 n1w2"
    llm.prompts.clear()
    r = get_response_synthesizer(llm=llm, response_mode="generation").synthesize("just the question?", _nodes(2, 3))
    assert llm.prompts == ["just the question?"] and len(r.source_nodes) == 2


def test_prompt_over_the_window_raises_with_the_overflow():
    llm = RecordingLLM(context_window=60, num_output=10)
    synth = get_response_synthesizer(llm=llm, response_mode="compact")
    with pytest.raises(ValueError, match="more than the 50 available"):
        synth.synthesize("q " * 200, _nodes(1, 3))
