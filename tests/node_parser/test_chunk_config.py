"""Parser configuration stays assignable, and node ids always follow it (issue 10 #8)."""

import pytest

from ragloom.node_parser import (
    CodeSplitter,
    MarkdownNodeParser,
    SentenceSplitter,
    SimpleFileNodeParser,
    TokenTextSplitter,
)
from ragloom.schema import Document

TEXT = "\n\n".join(
    f"Paragraph {i}. The lighthouse keeper climbed the stairs at dusk. He lit the lamp, and the ships passed."
    for i in range(12)
)
DOC = Document(text=TEXT, id_="doc", metadata={"title": "Keeper"})


def _out(parser, doc=DOC):
    return [(n.id_, n.text, n.start_char_idx, n.get_content("embed")) for n in parser.get_nodes_from_documents([doc])]


def test_mutated_splitter_gives_fresh_ids():
    s = SentenceSplitter(chunk_size=60, chunk_overlap=0, tokenizer="cl100k_base")
    first = _out(s)  # computes and caches the config digest
    s.chunk_size = 30
    assert _out(s) == _out(SentenceSplitter(chunk_size=30, chunk_overlap=0, tokenizer="cl100k_base"))
    assert _out(s) != first
    s.chunk_overlap = 10
    s.include_metadata = False
    s.tokenizer = "o200k_base"  # resolved as the constructor does
    s.paragraph_separator = "\n\n"  # the boundary levels are rebuilt
    fresh = SentenceSplitter(
        chunk_size=30, chunk_overlap=10, include_metadata=False, tokenizer="o200k_base", paragraph_separator="\n\n"
    )
    assert s.to_config() == fresh.to_config() and _out(s) == _out(fresh)

    t = TokenTextSplitter(chunk_size=40, chunk_overlap=0, tokenizer="cl100k_base")
    _out(t)
    t.separator, t.chunk_size = "\n", 25
    assert _out(t) == _out(TokenTextSplitter(chunk_size=25, chunk_overlap=0, separator="\n", tokenizer="cl100k_base"))

    md_doc = Document(text="# Keeper\n\n" + TEXT, id_="md")
    m = MarkdownNodeParser(chunk_size=80, tokenizer="cl100k_base")
    _out(m, md_doc)
    m.chunk_size, m.tokenizer = 40, "o200k_base"
    assert _out(m, md_doc) == _out(MarkdownNodeParser(chunk_size=40, tokenizer="o200k_base"), md_doc)
    m.chunk_size = None  # no budget is valid for a format parser
    assert _out(m, md_doc) == _out(MarkdownNodeParser(chunk_size=None, tokenizer="o200k_base"), md_doc)

    code = Document(text="def f():\n    return 1\n\n\ndef g():\n    return 2\n", id_="code")
    c = CodeSplitter(language="python", chunk_lines=2, chunk_lines_overlap=0, chunk_size=100, tokenizer="cl100k_base")
    _out(c, code)
    c.chunk_lines = 40
    fresh_c = CodeSplitter(
        language="python", chunk_lines=40, chunk_lines_overlap=0, chunk_size=100, tokenizer="cl100k_base"
    )
    assert _out(c, code) == _out(fresh_c, code)

    r = SimpleFileNodeParser(chunk_size=60, chunk_overlap=0, tokenizer="cl100k_base")
    _out(r)
    r.chunk_size = 30  # the router builds its parsers again
    assert _out(r) == _out(SimpleFileNodeParser(chunk_size=30, chunk_overlap=0, tokenizer="cl100k_base"))


def test_mutated_splitter_is_validated():
    s = SentenceSplitter(chunk_size=60, chunk_overlap=20, tokenizer="cl100k_base")
    for name, value in (("chunk_size", 0), ("chunk_size", 20), ("chunk_overlap", 60), ("chunk_overlap", -1)):
        with pytest.raises(ValueError, match=name.split("_")[1]):
            setattr(s, name, value)
    with pytest.raises(ValueError, match="chunk_size must be > 0"):
        s.chunk_size = None  # only the format parsers have an optional budget
    assert (s.chunk_size, s.chunk_overlap) == (60, 20)  # a rejected value is not stored
    s.chunk_overlap = 5
    s.chunk_size = 10  # lowered below the old overlap once the overlap is lowered first
    assert (s.chunk_size, s.chunk_overlap) == (10, 5)
    with pytest.raises(ValueError, match="unknown tokenizer"):
        s.tokenizer = "no-such-tokenizer"
