"""TreeIndex against the prompt-recording LLM server: the bottom-up build, LlamaIndex's inserter,
incremental refreshes (zero LLM calls when nothing changed, one re-summary per affected node when a
document changed), persistence, every retriever mode, prompts that fit a small window, Chinese text.

Leaf ``i`` carries the tag ``tNN``; the scripted model summarises a prompt as ``SUM`` + every tag in
it (sorted), so a summary names the leaves below it, and picks the listed item that holds the tag the
question (or the new passage) asks about.
"""

import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Document  # noqa: E402
from ragloom.data_structs import IndexGraph, IndexStruct  # noqa: E402
from ragloom.indices.loading import load_index_from_storage  # noqa: E402
from ragloom.indices.tree import TreeIndex, TreeSelectLeafRetriever  # noqa: E402
from ragloom.indices.tree.shape import TreeShape, summary_id  # noqa: E402
from ragloom.indices.tree.utils import extract_choice_numbers, fair_shares  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402

TAG = re.compile(r"\bt(\d\d)\b")
ITEM = re.compile(r"^\((\d+)\) (.*)$", re.MULTILINE)
SPLITTER = SentenceSplitter(chunk_size=256, chunk_overlap=0)


def tags(text):
    return sorted(set(TAG.findall(text)))


def answer(prompt):
    """The scripted model: summaries, insert choices and retrieval choices, all from the prompt."""
    if prompt.rstrip().endswith("Summary:"):
        return "SUM " + " ".join("t" + t for t in tags(prompt))
    if prompt.rstrip().endswith("Answer:"):  # a response synthesizer's question
        return "FINAL " + " ".join("t" + t for t in tags(prompt.split("Question:")[0]))
    items = {int(k): v for k, v in ITEM.findall(prompt)}
    if "new passage" in prompt:
        new = tags(prompt.split("Here is a new passage:")[1])[0]
        below = [k for k, v in items.items() if any(int(t) < int(new) for t in tags(v))]
        return f"ANSWER: {max(below) if below else 1}"
    wanted = tags(prompt.split("to this question:")[1])
    chosen = [k for k, v in items.items() if set(wanted) & set(tags(v))]
    many = "at most" in prompt
    return "ANSWER: " + (", ".join(map(str, chosen)) if many else str(chosen[0] if chosen else 99))


def leaf_docs(n, word="note"):
    return [Document(text=f"This is {word} t{i:02d}, a short passage.", id_=f"doc{i:02d}") for i in range(n)]


def make_llm(srv, **kw):
    return OpenAILike(model="m", api_base=srv.url, max_retries=0, **kw)


@pytest.fixture()
def server():
    with OpenAICompatibleServer(answer=answer) as srv:
        yield srv


def prompts(srv, start=0):
    return [r["prompt"] for r in srv.requests[start:]]


# -- building ----------------------------------------------------------------------------------------
def test_bottom_up_build_summarises_groups_in_order(server):
    index = TreeIndex.from_documents(leaf_docs(25), llm=make_llm(server), num_children=5, transformations=[SPLITTER])
    sent = prompts(server)
    assert len(sent) == 5  # 25 leaves -> 5 summaries -> 5 roots, no level above
    for g, prompt in enumerate(sent):
        assert tags(prompt) == [f"{i:02d}" for i in range(5 * g, 5 * g + 5)]
        assert "Summarise the text" in prompt
    struct = index.index_struct
    assert isinstance(struct, IndexGraph) and struct.size == 30
    roots = [struct.all_nodes[i] for i in sorted(struct.root_nodes)]
    texts = [index._index_struct.summaries[r] for r in roots]
    assert texts == ["SUM " + " ".join(f"t{i:02d}" for i in range(5 * g, 5 * g + 5)) for g in range(5)]
    # summary ids hash their children; positions follow LlamaIndex (leaves first)
    for r in roots:
        kids = struct.node_id_to_children_ids[r]
        assert r == summary_id(kids) and all(struct.node_id_to_index[k] < 25 for k in kids)


def test_two_levels_and_small_trees(server):
    llm = make_llm(server)
    TreeIndex.from_documents(leaf_docs(12), llm=llm, num_children=3, transformations=[SPLITTER])
    assert len(prompts(server)) == 4 + 2  # 12 -> 4 -> 2 roots
    top = prompts(server)[-1]
    assert "SUM t09 t10 t11" in top  # the second level summarises summaries
    n = len(server.requests)
    small = TreeIndex.from_documents(leaf_docs(3), llm=llm, num_children=3, transformations=[SPLITTER])
    assert len(server.requests) == n  # <= num_children leaves: they are the roots, no LLM call
    assert [x.node.get_content() for x in small.as_retriever(retriever_mode="root").retrieve("q")] == \
        [d.text for d in leaf_docs(3)]


# -- retrieval -----------------------------------------------------------------------------------------
def test_select_leaf_walks_down_with_the_llm(server):
    index = TreeIndex.from_documents(leaf_docs(25), llm=make_llm(server), num_children=5, transformations=[SPLITTER])
    n = len(server.requests)
    got = index.as_retriever().retrieve("Where is t13 mentioned?")
    assert [x.node.get_content() for x in got] == ["This is note t13, a short passage."]
    asked = prompts(server, n)
    assert len(asked) == 2  # roots, then the chosen summary's leaves
    assert "(3) SUM t10 t11 t12 t13 t14" in asked[0] and "Where is t13 mentioned?" in asked[0]
    assert "(4) This is note t13" in asked[1] and "ANSWER: <number>" in asked[1]
    two = index.as_retriever(child_branch_factor=2).retrieve("Which of t03 and t21?")
    assert sorted(tags(" ".join(x.node.get_content() for x in two))) == ["03", "21"]
    assert "at most 2" in prompts(server)[-1]


def test_bad_choice_ends_branch(server):
    index = TreeIndex.from_documents(leaf_docs(25), llm=make_llm(server), num_children=5, transformations=[SPLITTER])
    assert index.as_retriever().retrieve("Where is t77?") == []  # the model answers 99: out of range


def test_root_all_leaf_and_no_tree_modes(server):
    llm = make_llm(server)
    index = TreeIndex.from_documents(leaf_docs(25), llm=llm, num_children=5, transformations=[SPLITTER])
    n = len(server.requests)
    roots = index.as_retriever(retriever_mode="root").retrieve("anything")
    assert [r.node.get_content() for r in roots][0] == "SUM t00 t01 t02 t03 t04"
    leaves = index.as_retriever(retriever_mode="all_leaf").retrieve("anything")
    assert [tags(x.node.get_content())[0] for x in leaves] == [f"{i:02d}" for i in range(25)]
    assert len(server.requests) == n
    flat = TreeIndex.from_documents(leaf_docs(25), llm=llm, num_children=5, build_tree=False,
                                    transformations=[SPLITTER])
    assert len(server.requests) == n  # no tree: no summary
    assert len(flat.as_retriever(retriever_mode="all_leaf").retrieve("q")) == 25
    with pytest.raises(ValueError, match="build_tree=False"):
        flat.as_retriever(retriever_mode="select_leaf")
    with pytest.raises(ValueError, match="retriever_mode must be one of"):
        index.as_retriever(retriever_mode="nope")
    with pytest.raises(ValueError, match="child_branch_factor"):
        TreeSelectLeafRetriever(index, child_branch_factor=0)
    with pytest.raises(ValueError, match="num_children"):
        TreeIndex(num_children=1)


def test_query_engines(server):
    index = TreeIndex.from_documents(leaf_docs(9), llm=make_llm(server), num_children=3, transformations=[SPLITTER])
    n = len(server.requests)
    response = index.as_query_engine(retriever_mode="all_leaf", response_mode="tree_summarize").query("What is t04?")
    asked = [r["prompt"] for r in server.requests[n:]]
    assert len(asked) == 1 and "This is note t04" in asked[0] and "This is note t08" in asked[0]
    assert str(response) == "FINAL " + " ".join(f"t{i:02d}" for i in range(9))
    n = len(server.requests)
    index.as_query_engine().query("Where is t05?")
    asked = [r["prompt"] for r in server.requests[n:]]
    # select_leaf with the engine's LLM: two choices, then the answer from the chosen leaf only
    assert len(asked) == 3 and "This is note t05" in asked[2] and "t04" not in asked[2]


def test_select_leaf_embedding_uses_the_bundled_model(server):
    topics = {
        "cook": "Bake the bread at 220 degrees until the crust is golden brown.",
        "ship": "The lighthouse keeper watched the ships pass the rocky harbour at night.",
        "code": "Python functions return None when they reach the end without a return statement.",
        "tea": "Green tea leaves are steamed or pan-fired to stop oxidation.",
    }
    docs = [Document(text=t, id_=k) for k, t in topics.items()]
    index = TreeIndex.from_documents(docs, llm=make_llm(server), num_children=2, transformations=[SPLITTER],
                                     embed_model="default")
    n = len(server.requests)
    got = index.as_retriever(retriever_mode="select_leaf_embedding").retrieve("What temperature for baking bread?")
    assert len(server.requests) == n  # no LLM at query time
    assert [x.node.get_content() for x in got] == [topics["cook"]]
    assert 0.3 < got[0].score <= 1.0


# -- incremental ----------------------------------------------------------------------------------------
def test_insert_follows_the_llamaindex_inserter(server):
    index = TreeIndex.from_documents(leaf_docs(25), llm=make_llm(server), num_children=5, transformations=[SPLITTER])
    before = dict(index._index_struct.summaries)
    n = len(server.requests)
    index.insert(Document(text="This is note t12, a new passage.", id_="new12"))
    asked = prompts(server, n)
    # choose among the roots (1), split the full parent into halves (2), re-summarise it (1)
    assert len(asked) == 4
    assert "Here is a new passage" in asked[0] and "t12, a new passage" in asked[0]
    # the new leaf joins the end of the chosen parent's leaves: t10 t11 t12 | t13 t14 t12'
    assert [tags(p) for p in asked[1:3]] == [["10", "11", "12"], ["12", "13", "14"]]
    assert "t12, a new passage" in asked[2]
    assert tags(asked[3]) == ["10", "11", "12", "13", "14"] and "SUM t10 t11" in asked[3]
    struct = index.index_struct
    assert len(struct.root_nodes) == 5
    changed = set(index._index_struct.summaries) - set(before)
    assert len(changed) == 3  # the two halves and the re-summarised root; the other roots kept
    leaves = [tags(x.node.get_content())[0] for x in index.as_retriever(retriever_mode="all_leaf").retrieve("q")]
    assert leaves == [f"{i:02d}" for i in range(15)] + ["12"] + [f"{i:02d}" for i in range(15, 25)]
    assert [x.node.get_content() for x in index.as_retriever().retrieve("Where is t12?")][0].startswith("This is")


def test_refresh_persist_reload_changed_and_deleted(server, tmp_path):
    llm = make_llm(server)
    docs = leaf_docs(25)
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = TreeIndex.from_documents(docs, llm=llm, num_children=5, transformations=[SPLITTER],
                                     storage_context=storage)
    storage.persist()
    n = len(server.requests)
    assert index.refresh_ref_docs(docs) == [False] * 25
    assert len(server.requests) == n

    again = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm)
    assert isinstance(again, TreeIndex) and again.num_children == 5
    assert again.refresh_ref_docs(docs) == [False] * 25
    assert len(server.requests) == n  # unchanged documents after a reload: zero LLM calls
    roots_before = again.index_struct.root_nodes
    assert [x.node.get_content() for x in again.as_retriever(retriever_mode="root").retrieve("q")][1] == \
        "SUM t05 t06 t07 t08 t09"

    docs[7] = Document(text="This is edited note t07, a changed passage.", id_="doc07")
    assert again.refresh_ref_docs(docs) == [i == 7 for i in range(25)]
    asked = prompts(server, n)
    # the new leaf is placed (1 choice); its parent lost the old leaf and got the new one: 1 re-summary
    assert len(asked) == 2 and "edited note t07" in asked[0] and "edited note t07" in asked[1]
    struct = again.index_struct
    assert sorted(struct.root_nodes.values()) != sorted(roots_before.values())
    assert len(set(struct.root_nodes.values()) & set(roots_before.values())) == 4  # other roots untouched
    got = again.as_retriever().retrieve("Where is t07?")
    assert [x.node.get_content() for x in got] == ["This is edited note t07, a changed passage."]

    n = len(server.requests)
    again.delete_ref_doc("doc12")
    assert len(server.requests) == n + 1 and tags(prompts(server, n)[0]) == ["10", "11", "13", "14"]
    storage2 = again.storage_context
    storage2.persist()
    third = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm)
    leaves = [tags(x.node.get_content())[0] for x in third.as_retriever(retriever_mode="all_leaf").retrieve("q")]
    assert "12" not in leaves and len(leaves) == 24
    assert IndexStruct.from_json(third._index_struct.to_json()) == third._index_struct


def test_changed_document_keeps_its_unchanged_chunks_in_place(server):
    small = SentenceSplitter(chunk_size=9, chunk_overlap=0)  # one sentence per chunk
    docs = [Document(text=f"Note t{i:02d} starts here. Note t{i:02d} ends here.", id_=f"d{i}") for i in range(6)]
    index = TreeIndex.from_documents(docs, llm=make_llm(server), num_children=3, transformations=[small])
    assert len(index._node_ids()) == 12
    first = index._node_ids("d2")[0]
    parent_before = index._shape().parents()[first]
    n = len(server.requests)
    docs[2] = Document(text="Note t02 starts here. Note t02 was edited.", id_="d2")
    assert index.refresh_ref_docs(docs) == [i == 2 for i in range(6)]
    asked = prompts(server, n)
    placing = [p.split("Here is a new passage:")[1] for p in asked if "new passage" in p]
    assert placing and all("t02 was edited" in p for p in placing)  # only the new chunk is placed
    assert len(placing) == 2  # one choice per level of summaries (12 -> 4 -> 2 roots)
    shape = index._shape()
    assert first in shape.leaves() and sorted(shape.leaves()) == sorted(index._node_ids())
    assert shape.parents()[first] is not None and shape.stale() == []
    assert len([p for p in asked if "Summarise" in p]) <= 3  # the affected summaries only, once each
    assert parent_before not in shape.children  # it lost a child: re-summarised under a new id


def test_every_prompt_fits_a_small_window(server):
    words = " ".join(f"w{k}" for k in range(120))
    docs = [Document(text=f"Passage t{i:02d}: {words}.", id_=f"d{i}") for i in range(9)]
    llm = make_llm(server, context_window=420, max_tokens=40)
    whole = [SentenceSplitter(chunk_size=1024, chunk_overlap=0)]  # one chunk per passage
    index = TreeIndex.from_documents(docs, llm=llm, num_children=3, transformations=whole)
    index.insert(Document(text=f"Passage t10: {words}.", id_="d10"))
    index.as_retriever(child_branch_factor=2).retrieve("Where is t04?")
    assert len(server.requests) >= 6
    for req in server.requests:
        assert llm.count_tokens(req["prompt"]) + 40 <= 420
    summary_prompts = [p for p in prompts(server) if "Summarise" in p]
    assert all(len(tags(p)) >= 2 for p in summary_prompts)  # cut, but every child still has its start
    with pytest.raises(ValueError, match="context window"):
        TreeIndex.from_documents(docs, llm=make_llm(server, context_window=70, max_tokens=40), num_children=3,
                                 transformations=whole)


def test_chinese_tree(server):
    texts = ["萧炎是乌坦城萧家的少年 t00。", "萧薰儿是萧炎的青梅竹马 t01。", "药老住在萧炎的戒指里 t02。",
             "纳兰嫣然是云岚宗的弟子 t03。", "云山是云岚宗的宗主 t04。", "美杜莎是蛇人族的女王 t05。"]
    docs = [Document(text=t, id_=f"zh{i}") for i, t in enumerate(texts)]
    index = TreeIndex.from_documents(docs, llm=make_llm(server), num_children=2, transformations=[SPLITTER])
    assert any("萧薰儿是萧炎的青梅竹马" in p for p in prompts(server))
    got = index.as_retriever().retrieve("药老在哪里？ t02")
    assert [x.node.get_content() for x in got] == [texts[2]]


# -- pieces -----------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 500), max_size=12), st.integers(0, 2000))
def test_fair_shares_are_max_min_fair(sizes, budget):
    caps = fair_shares(sizes, budget)
    assert sum(caps) <= max(budget, 0)
    assert all(0 <= c <= s for c, s in zip(caps, sizes, strict=True))
    cut = [c for c, s in zip(caps, sizes, strict=True) if c < s]
    if cut:  # every text that was cut got at least what any other text got, minus rounding
        assert min(cut) >= max(caps) - 1
        assert budget - sum(caps) < len(sizes)


def test_extract_choice_numbers():
    assert extract_choice_numbers("ANSWER: 3", 5) == [3]
    assert extract_choice_numbers("I think (2) because... ANSWER: 4, 1", 5, 2) == [4, 1]
    assert extract_choice_numbers("ANSWER: 9 (out of range) so 2", 5) == [2]
    assert extract_choice_numbers("答案：2", 3) == [2]
    assert extract_choice_numbers("none", 3) == []
    assert extract_choice_numbers("ANSWER: 2, 2, 3", 3, 3) == [2, 3]


class _Summaries:
    """An in-test LLM protocol implementation for the property test (thousands of calls)."""

    def __init__(self):
        from ragloom.llms.base import CustomLLM
        from ragloom.llms.types import CompletionResponse, LLMMetadata

        outer = self

        class Model(CustomLLM):
            @property
            def metadata(self):
                return LLMMetadata(context_window=100_000, num_output=50, model_name="scripted")

            def complete(self, prompt, formatted=False, **kwargs):
                outer.calls += 1
                return CompletionResponse(text=answer(prompt))

        self.calls = 0
        self.llm = Model()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["add", "change", "delete"]), st.integers(0, 30)), min_size=1, max_size=14),
       st.integers(2, 4))
def test_any_sequence_of_writes_keeps_the_tree_consistent(ops, num_children):
    model = _Summaries()
    index = TreeIndex(llm=model.llm, num_children=num_children, transformations=[SPLITTER])
    live = {}
    for op, i in ops:
        doc_id = f"doc{i:02d}"
        if op == "delete":
            index.delete_ref_doc(doc_id)
            live.pop(doc_id, None)
        else:
            text = f"This is {'edited ' if op == 'change' else ''}note t{i:02d}, a passage."
            index.refresh_ref_docs([Document(text=text, id_=doc_id)])
            live[doc_id] = text
        shape = index._shape()
        leaves = [x.node.get_content() for x in index.as_retriever(retriever_mode="all_leaf").retrieve("q")]
        assert sorted(leaves) == sorted(live.values())
        assert sorted(shape.leaves()) == sorted(index._node_ids())
        assert shape.stale() == [] and len(shape.roots) <= num_children
        for sid, kids in shape.children.items():  # every summary says what is below it
            below = TreeShape(roots=[sid], children=shape.children, texts=shape.texts).leaves()
            want = sorted({t for leaf in index._get_nodes(below) for t in tags(leaf.get_content())})
            assert tags(shape.texts[sid]) == want and 1 <= len(kids) <= num_children
    calls = model.calls
    index.refresh_ref_docs([Document(text=t, id_=k) for k, t in live.items()])
    assert model.calls == calls  # nothing changed: no call
