"""Code splitting without the ``code`` extra (tree-sitter): never skipped, the import is made to fail.

``sys.modules["tree_sitter"] = None`` makes ``import tree_sitter`` raise ``ImportError`` exactly as
it does when the package is not installed (issue 10 #12).
"""

import logging
import sys

import pytest

from ragloom.node_parser import CodeSplitter, SentenceSplitter, SimpleFileNodeParser
from ragloom.schema import Document

INSTALL = 'pip install "ragloom[code]"'


@pytest.fixture
def no_tree_sitter(monkeypatch):
    monkeypatch.setitem(sys.modules, "tree_sitter", None)


def test_code_splitter_available_without_tree_sitter(no_tree_sitter, caplog):
    s = CodeSplitter(language="python", chunk_lines=2, chunk_lines_overlap=0, tokenizer="cl100k_base")
    assert s.available is False  # not an ImportError

    from ragloom._optional import MissingDependencyError, available, require

    assert available("tree_sitter") is False
    with pytest.raises(MissingDependencyError, match="ragloom\\[code\\]") as ei:
        require("tree_sitter", "code", "CodeSplitter")
    assert isinstance(ei.value, ImportError) and ei.value.extra == "code"
    assert isinstance(s.unavailable_reason, MissingDependencyError) and INSTALL in str(s.unavailable_reason)
    with caplog.at_level(logging.WARNING):
        nodes = s.get_nodes_from_documents([Document(text="a = 1\nb = 2\nc = 3\n", id_="py")])
    assert [n.text for n in nodes] == ["a = 1\nb = 2", "c = 3"]  # whole lines within the budget
    assert INSTALL in caplog.text and "line splitting" in caplog.text


def test_parser_for_py_without_code_extra(no_tree_sitter, caplog):
    r = SimpleFileNodeParser(tokenizer="cl100k_base")
    docs = [
        Document(text="def f():\n    return 1\n", id_="a.py", metadata={"file_path": "/x/a.py"}),
        Document(text="function g() { return 2 }\n", id_="b.js", metadata={"file_path": "/x/b.js"}),
    ]
    with caplog.at_level(logging.WARNING):
        assert isinstance(r.parser_for(".py"), SentenceSplitter)
        assert isinstance(r.parser_for(".js"), SentenceSplitter)
        nodes = r.get_nodes_from_documents(docs)
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings  # one for every code file, naming the extra
    assert INSTALL in warnings[0] and "plain text" in warnings[0]
    assert [n.text for n in nodes] == [d.text.strip() for d in docs]
    assert all("start_line" not in n.metadata for n in nodes)


def test_format_parser_bug_is_not_hidden(monkeypatch):
    """Only "not in this format" falls back to sentence splitting; a parser bug propagates."""
    from ragloom.node_parser import MarkdownNodeParser

    def broken(self, doc, text):
        raise KeyError("a bug")

    monkeypatch.setattr(MarkdownNodeParser, "_pieces", broken)
    r = SimpleFileNodeParser(tokenizer="cl100k_base")
    with pytest.raises(KeyError, match="a bug"):
        r.get_nodes_from_documents([Document(text="# T\n\nx\n", id_="m", metadata={"file_path": "/x/m.md"})])
