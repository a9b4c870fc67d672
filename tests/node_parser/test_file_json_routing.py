"""JSONNodeParser, FlatReader and the file-type routers."""

import json
import logging
from pathlib import Path

from invariants import assert_invariants

from ragloom.node_parser import (
    CodeSplitter,
    CodeTextRouter,
    HTMLNodeParser,
    JSONNodeParser,
    MarkdownNodeParser,
    SentenceSplitter,
    SimpleFileNodeParser,
)
from ragloom.readers import FlatReader
from ragloom.readers.flat import FlatReader as FlatReader2
from ragloom.schema import Document


def test_json_paths_and_source_offsets():
    src = json.dumps({"a": {"b c": [1, {"d": "x"}]}, "e": [], "f": "hello"}, indent=2)
    p = JSONNodeParser(tokenizer="cl100k_base")
    doc = Document(text=src, id_="j")
    nodes = assert_invariants(
        p, doc, tokenizer=p.tokenizer, chunk_size=p.chunk_size, exact_offsets=False, coverage=False
    )
    assert nodes[0].text == 'a["b c"][0]: 1\na["b c"][1].d: x\ne: []\nf: hello'
    assert src[nodes[0].start_char_idx : nodes[0].end_char_idx].startswith("1")
    assert src[nodes[0].start_char_idx : nodes[0].end_char_idx].endswith('"hello"')


def test_json_large_array_split_between_elements():
    data = {"items": [{"id": i, "name": f"item number {i}"} for i in range(300)]}
    p = JSONNodeParser(chunk_size=60, tokenizer="cl100k_base")
    doc = Document(text=json.dumps(data), id_="big")
    nodes = assert_invariants(p, doc, tokenizer=p.tokenizer, chunk_size=60, exact_offsets=False, coverage=False)
    assert len(nodes) > 10
    for n in nodes:  # cuts fall between elements: each node starts with an element's first field
        assert n.text.split("\n")[0].endswith(tuple(f"].id: {i}" for i in range(300)))


def test_json_lines_and_invalid_json_fallback(caplog):
    p = JSONNodeParser(tokenizer="cl100k_base")
    nodes = p.get_nodes_from_documents([Document(text='{"a": 1}\n{"a": 2}\n', id_="l")])
    assert nodes[0].text == "[0].a: 1\n[1].a: 2"
    with caplog.at_level(logging.WARNING):
        nodes = p.get_nodes_from_documents([Document(text="not json { at all", id_="bad")])
    assert [n.text for n in nodes] == ["not json { at all"] and "falling back" in caplog.text


def test_flat_reader(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    return 1\n", encoding="utf-8")
    docs = FlatReader().load_data(Path(f))
    assert FlatReader is FlatReader2
    assert len(docs) == 1 and docs[0].text == "def f():\n    return 1\n"
    assert docs[0].metadata["extension"] == ".py" and docs[0].metadata["filename"] == "x.py"
    docs2 = FlatReader().load_data(f, extra_info={"k": "v"})
    assert docs2[0].metadata["k"] == "v" and docs2[0].id_ == docs[0].id_


def _doc(name, text):
    return Document(text=text, id_=name, metadata={"file_path": f"/x/{name}"})


def test_simple_file_node_parser_routes_by_extension():
    r = SimpleFileNodeParser(tokenizer="cl100k_base")
    kinds = {
        ".py": CodeSplitter, ".java": CodeSplitter, ".cs": CodeSplitter, ".ts": CodeSplitter, ".tsx": CodeSplitter,
        ".js": CodeSplitter, ".jsx": CodeSplitter, ".go": CodeSplitter, ".rs": CodeSplitter, ".c": CodeSplitter,
        ".cpp": CodeSplitter, ".h": CodeSplitter, ".md": MarkdownNodeParser, ".html": HTMLNodeParser,
        ".json": JSONNodeParser, ".txt": SentenceSplitter, ".rst": SentenceSplitter, "": SentenceSplitter,
    }
    import importlib.util

    have_ts = importlib.util.find_spec("tree_sitter") is not None
    for ext, cls in kinds.items():
        if cls is CodeSplitter and not have_ts:  # ragloom[code] not installed: sentence fallback
            cls = SentenceSplitter
        assert isinstance(r.parser_for(ext), cls), ext
    assert isinstance(CodeTextRouter(tokenizer="cl100k_base").parser_for(".md"), SentenceSplitter)
    nodes = r.get_nodes_from_documents(
        [_doc("a.md", "# T\n\nx\n"), _doc("b.py", "def f():\n    pass\n"), _doc("c.txt", "Hello.")]
    )
    assert [n.metadata.get("header_path_list") for n in nodes] == [["T"], None, None]
    if have_ts:
        assert nodes[1].metadata["start_line"] == 1


def test_router_falls_back_when_grammar_missing(caplog, monkeypatch):
    from ragloom.node_parser.code import languages

    def missing(name):
        raise languages.LanguageUnavailable("no grammar for 'go': tree-sitter-go: not installed")

    monkeypatch.setattr("ragloom.node_parser.code.code.get_parser", missing)
    r = SimpleFileNodeParser(tokenizer="cl100k_base")
    with caplog.at_level(logging.WARNING):
        p = r.parser_for(".go")
        nodes = r.get_nodes_from_documents([_doc("m.go", "package main\n\nfunc main() {}\n")])
    assert isinstance(p, SentenceSplitter) and nodes
    assert "no tree-sitter grammar" in caplog.text and "tree-sitter-go" in caplog.text


def test_a_json_file_read_by_the_directory_reader_is_cut_at_its_structure(tmp_path, caplog):
    """The reader renders a .json file as ``key: value`` lines; the auto parser's JSONNodeParser took
    that for "not JSON" and sentence-split it, cutting after ``name:`` (a clause end) with the value in
    the next chunk.  Shaped like shared/data/json_zh_poetry/宋词/author.song.json."""
    from ragloom.readers import SimpleDirectoryReader

    authors = [{"description": "北宋文学家、书画家。" * 12 + "代表作有《念奴娇》等。" * 6, "name": f"作者{i}",
                "short_description": "字子瞻，号东坡居士。" * 3} for i in range(6)]
    (tmp_path / "author.song.json").write_text(json.dumps(authors, ensure_ascii=False), encoding="utf-8")
    docs = SimpleDirectoryReader(str(tmp_path)).load_data()
    assert docs[0].text.startswith("-\n  description: ")  # the reader's rendering, not JSON
    p = SimpleFileNodeParser(chunk_size=64)
    with caplog.at_level(logging.WARNING):
        nodes = assert_invariants(p, docs[0], tokenizer=p.tokenizer, chunk_size=64)
    assert "falling back" not in caplog.text
    texts = [n.text for n in nodes]
    for i in range(6):  # every name line is whole, in one chunk, as the first line of it or after a line
        assert sum(f"name: 作者{i}" in t.split("\n") or f"  name: 作者{i}" in t.split("\n") for t in texts) == 1, texts
    assert not any(t.rstrip().endswith(("name:", "\n-")) or t == "-" for t in texts), texts
