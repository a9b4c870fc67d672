"""Every response mode against a real OpenAI-compatible HTTP server on 127.0.0.1 that records
each prompt (``tests/llm_server.py``), through the real ``OpenAILike`` client.

Chunk ``i`` is made of the words ``c{i}w0 c{i}w1 …`` (4 cl100k tokens each), and the ``k``-th
answer starts with the tag ``ANS{k}``, so every prompt tells which chunks and which earlier
answers it contains.
"""

import re
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import get_response_synthesizer  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.schema import NodeWithScore, TextNode  # noqa: E402

QUERY = "What do the chunks say?"
NUM_OUTPUT = 64
_TAG = re.compile(r"\bANS(\d+)\b")
_WORD = re.compile(r"\bc(\d+)w(\d+)\b")


class Scripted:
    """The server's answer function: ``ANS{k}`` plus ``words`` filler words; records the tree level
    of each call (1 + the highest level among the answers its prompt contains)."""

    def __init__(self, words=3, delay=0.0):
        self.words = words
        self.delay = delay
        self.level_of = {}
        self.calls = []  # (k, level, prompt)
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def __call__(self, prompt):
        with self._lock:
            k = len(self.calls) + 1
            tags = [int(t) for t in _TAG.findall(prompt)]
            level = 1 + max((self.level_of[t] for t in tags), default=0)
            self.level_of[k] = level
            self.calls.append((k, level, prompt))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self.answer(k)
        finally:
            with self._lock:
                self.active -= 1

    def answer(self, k):
        return " ".join([f"ANS{k}"] + [f"a{k}x{j}" for j in range(self.words)])


def nodes(n, words=40):
    return [
        NodeWithScore(
            node=TextNode(id_=f"node-{i}", text=" ".join(f"c{i}w{j}" for j in range(words))), score=1.0 - i / 100
        )
        for i in range(n)
    ]


def chunk_words(prompt):
    """``{chunk: set(word index)}`` of the chunk words in ``prompt``."""
    out = {}
    for c, w in _WORD.findall(prompt):
        out.setdefault(int(c), set()).add(int(w))
    return out


@pytest.fixture
def server():
    script = Scripted()
    with OpenAICompatibleServer(answer=script) as srv:
        srv.script = script
        yield srv


def make_llm(srv, context_window, **kwargs):
    return OpenAILike(model="test-model", api_base=srv.url, api_key="unused", context_window=context_window,
                      max_tokens=NUM_OUTPUT, **kwargs)


def run(srv, mode, the_nodes, context_window, llm_kwargs=None, **kwargs):
    srv.reset()
    srv.script.__init__(words=srv.script.words, delay=srv.script.delay)
    llm = make_llm(srv, context_window, **(llm_kwargs or {}))
    synth = get_response_synthesizer(llm=llm, response_mode=mode, **kwargs)
    response = synth.synthesize(QUERY, the_nodes)
    return llm, response, srv.prompts


def assert_fit(llm, prompts, context_window):
    tok = llm.get_tokenizer()
    for p in prompts:
        assert tok.count(p) <= context_window - NUM_OUTPUT


@pytest.mark.parametrize("is_chat_model", [True, False])
def test_refine_one_call_per_chunk_each_with_the_previous_answer(server, is_chat_model):
    the_nodes = nodes(5)
    llm, response, prompts = run(server, "refine", the_nodes, 1024, llm_kwargs={"is_chat_model": is_chat_model})
    assert len(prompts) == 5
    endpoint = "chat" if is_chat_model else "completions"
    assert all(r["endpoint"] == endpoint for r in server.requests)
    assert_fit(llm, prompts, 1024)
    assert chunk_words(prompts[0]) == {0: set(range(40))}
    assert QUERY in prompts[0] and not _TAG.search(prompts[0])
    for k in range(1, 5):
        # the k+1-th prompt holds the whole previous answer and the next chunk, nothing else
        assert server.script.answer(k) in prompts[k]
        assert [int(t) for t in _TAG.findall(prompts[k])] == [k]
        assert chunk_words(prompts[k]) == {k: set(range(40))}
        assert QUERY in prompts[k]
    assert response.response == server.script.answer(5)
    assert [n.node.node_id for n in response.source_nodes] == [f"node-{i}" for i in range(5)]


def test_refine_splits_a_chunk_too_big_for_the_window(server):
    llm, response, prompts = run(server, "refine", nodes(1, words=150), 400)
    assert len(prompts) >= 2
    assert_fit(llm, prompts, 400)
    seen = set()
    for i, p in enumerate(prompts):
        seen |= chunk_words(p).get(0, set())
        if i:
            assert server.script.answer(i) in p
    assert seen == set(range(150))


def test_compact_makes_fewer_calls_than_refine_on_the_same_nodes(server):
    the_nodes = nodes(5)
    _, _, refine_prompts = run(server, "refine", the_nodes, 600)
    llm, response, prompts = run(server, "compact", the_nodes, 600)
    assert len(refine_prompts) == 5
    assert 2 <= len(prompts) < len(refine_prompts)
    assert_fit(llm, prompts, 600)
    # chunks are packed together in order, and nothing is lost
    first = chunk_words(prompts[0])
    assert len(first) >= 2 and first[0] == set(range(40))
    seen = {}
    for p in prompts:
        for c, ws in chunk_words(p).items():
            seen.setdefault(c, set()).update(ws)
    assert seen == {i: set(range(40)) for i in range(5)}
    for k in range(1, len(prompts)):
        assert server.script.answer(k) in prompts[k]
    assert response.response == server.script.answer(len(prompts))


def _levels(script):
    levels = {}
    for k, level, prompt in script.calls:
        levels.setdefault(level, []).append((k, prompt))
    return [levels[lv] for lv in sorted(levels)]


@pytest.mark.parametrize("use_async", [False, True])
def test_tree_summarize_recurses_level_by_level_until_one_chunk(server, use_async):
    server.script.words = 45  # long answers: the summaries themselves need two calls
    server.script.delay = 0.15 if use_async else 0.0
    llm, response, prompts = run(server, "tree_summarize", nodes(8), 600, use_async=use_async)
    assert_fit(llm, prompts, 600)
    levels = _levels(server.script)
    sizes = [len(lv) for lv in levels]
    assert len(levels) >= 3, sizes
    assert sizes[-1] == 1 and all(a > b for a, b in pairwise(sizes)), sizes
    # level 1 reads the chunks only, and all of them
    seen = {}
    for _, p in levels[0]:
        assert not _TAG.search(p)
        for c, ws in chunk_words(p).items():
            seen.setdefault(c, set()).update(ws)
    assert seen == {i: set(range(40)) for i in range(8)}
    # each higher level reads exactly the answers of the level below, and no chunk text
    for below, level in pairwise(levels):
        tags = set()
        for _, p in level:
            assert not chunk_words(p)
            tags |= {int(t) for t in _TAG.findall(p)}
        assert tags == {k for k, _ in below}
    assert response.response == server.script.answer(levels[-1][0][0])
    if use_async:
        assert server.script.max_active >= 2  # a level's calls were in flight together
    else:
        assert server.script.max_active == 1


def test_simple_summarize_one_call_truncated_to_the_window(server):
    llm, response, prompts = run(server, "simple_summarize", nodes(5, words=60), 400)
    assert len(prompts) == 1
    tok = llm.get_tokenizer()
    assert tok.count(prompts[0]) <= 400 - NUM_OUTPUT
    found = chunk_words(prompts[0])
    assert sorted(found) == [0, 1, 2, 3, 4]
    sizes = [len(found[i]) for i in range(5)]
    for i in range(5):
        # each chunk keeps a prefix of its words: its equal share, not the whole chunk
        assert found[i] == set(range(len(found[i])))
        assert 0 < len(found[i]) < 60
    assert max(sizes) - min(sizes) <= 1
    assert response.response == server.script.answer(1)


def test_simple_summarize_counts_the_system_prompt(server):
    system = "You answer questions about documents carefully and briefly. " * 8
    llm, response, prompts = run(
        server, "simple_summarize", nodes(5, words=60), 400, llm_kwargs={"system_prompt": system}
    )
    (request,) = server.requests
    assert request["messages"][0] == {"role": "system", "content": system}
    tok = llm.get_tokenizer()
    assert tok.count(system) + tok.count(prompts[0]) <= 400 - NUM_OUTPUT
    assert sorted(chunk_words(prompts[0])) == [0, 1, 2, 3, 4]


def test_accumulate_one_call_per_chunk(server):
    llm, response, prompts = run(server, "accumulate", nodes(4), 1024)
    assert len(prompts) == 4
    for i, p in enumerate(prompts):
        assert chunk_words(p) == {i: set(range(40))} and QUERY in p
    expected = "\n---------------------\n".join(f"Response {k}: {server.script.answer(k)}" for k in range(1, 5))
    assert response.response == expected


def test_no_text_makes_no_call(server):
    llm, response, prompts = run(server, "no_text", nodes(3), 1024)
    assert prompts == [] and server.requests == []
    assert response.response == "" and [n.node.node_id for n in response.source_nodes] == ["node-0", "node-1", "node-2"]


def test_compact_streaming_over_http(server):
    the_nodes = nodes(5)
    server.reset()
    server.script.__init__()
    llm = make_llm(server, 600)
    response = get_response_synthesizer(llm=llm, response_mode="compact", streaming=True).synthesize(QUERY, the_nodes)
    before = len(server.prompts)
    text = "".join(response.response_gen)
    assert len(server.prompts) == before + 1  # the last call is made when the stream is read
    assert text == server.script.answer(before + 1)
    assert server.requests[-1]["body"]["stream"] is True
    assert all(not r["body"].get("stream") for r in server.requests[:-1])
