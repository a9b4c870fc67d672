"""The issue's Python walk-through, ported from LlamaIndex by changing imports, on real corpora.

Uses ../shared/data (excerpts of four classic novels, the FastAPI tutorial pages) copied to a
temporary folder, the bundled model and the real SQLite store, with default settings.
"""

import os

import pytest

from ragloom import (
    SimpleDirectoryReader,
    StorageContext,
    VectorStoreIndex,
    load_index_from_storage,
)

NOVELS = ["西游记", "红楼梦", "三国演义", "水浒传"]
EXCERPT_CHARS = 12_000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("corpus")
    for name in NOVELS:
        with open(os.path.join(shared_data, "zh_classics", f"{name}.utf8.txt"), encoding="utf-8") as f:
            text = f.read()[:EXCERPT_CHARS]
        (root / f"{name}.txt").write_text(text, encoding="utf-8")
    docs = os.path.join(shared_data, "markdown_fastapi", "docs", "en", "docs", "tutorial")
    for name in sorted(os.listdir(docs)):  # the 40 tutorial pages (about 430 chunks)
        if name.endswith(".md"):
            with open(os.path.join(docs, name), encoding="utf-8") as f:
                (root / name).write_text(f.read(), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def persisted(corpus, tmp_path_factory):
    docs = SimpleDirectoryReader(input_dir=str(corpus)).load_data()
    index = VectorStoreIndex.from_documents(docs, show_progress=False)
    out = tmp_path_factory.mktemp("storage")
    index.storage_context.persist(str(out))
    return out, {d.id_: d for d in docs}


def _load(path):
    return load_index_from_storage(StorageContext.from_defaults(persist_dir=str(path)))


def test_chinese_question_finds_the_right_novel(persisted):
    path, docs = persisted
    nodes = _load(path).as_retriever(similarity_top_k=5).retrieve("孙悟空的师父是谁")
    assert len(nodes) == 5
    assert [os.path.basename(n.node.ref_doc_id) for n in nodes].count("西游记.txt") >= 4
    for n in nodes:
        doc = docs[n.node.ref_doc_id]
        assert doc.text[n.node.start_char_idx : n.node.end_char_idx] == n.node.text


@pytest.mark.parametrize(
    "question, page",
    [
        ("How do I upload files?", "request-files.md"),
        ("How do I return a custom status code?", "response-status-code.md"),
        ("How do I run background tasks after returning a response?", "background-tasks.md"),
    ],
)
def test_english_question_finds_the_matching_page_first(persisted, question, page):
    path, _ = persisted
    nodes = _load(path).as_retriever(similarity_top_k=3).retrieve(question)
    assert os.path.basename(nodes[0].node.metadata["file_path"]) == page



def test_question_about_a_book_not_in_the_corpus_still_returns_scored_nodes(persisted):
    path, _ = persisted
    nodes = _load(path).as_retriever(similarity_top_k=5).retrieve("萧炎妹妹是谁")
    assert len(nodes) == 5 and all(n.score is not None for n in nodes)
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
