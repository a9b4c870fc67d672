"""Invariant property tests of the format-aware parsers (tests/node_parser/invariants.py)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import assert_invariants

from ragloom.node_parser import (
    CodeSplitter,
    HTMLNodeParser,
    JSONNodeParser,
    MarkdownNodeParser,
)
from ragloom.node_parser.file.html import html_text
from ragloom.schema import Document
from ragloom.tokenizers import get_tokenizer

TOK = get_tokenizer("cl100k_base")
SETTINGS = dict(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = st.sampled_from(
    ["alpha", "beta.", "Dr. Smith", "中文句子。", "逗号，", "😀", "a/b", "x" * 30, "\t", "\u00a0", " ", "\n", "\r\n"]
)
MD_BLOCKS = st.one_of(
    st.builds(lambda lvl, t: "#" * lvl + " " + t + "\n", st.integers(1, 6), st.text(min_size=0, max_size=12)),
    st.builds(lambda b: "```bash\n# not a header\n" + b + "\n```\n", st.text(max_size=40)),
    st.builds(lambda b: "~~~\n# nope\n" + b + "\n~~~\n", st.text(max_size=40)),
    st.builds(lambda ws: " ".join(ws) + "\n", st.lists(WORDS, max_size=40)),
    st.just("- item one\n- item two\n"),
    st.just("Title\n=====\n"),
    st.just("\n\n"),
    st.text(max_size=30),
)


@settings(**SETTINGS)
@given(blocks=st.lists(MD_BLOCKS, max_size=25), size=st.sampled_from([24, 60, 400]))
def test_markdown_invariants(blocks, size):
    p = MarkdownNodeParser(chunk_size=size, tokenizer=TOK)
    doc = Document(text="".join(blocks), id_="md", metadata={"file_name": "a.md"})
    assert_invariants(p, doc, tokenizer=TOK, chunk_size=size)


HTML_PARTS = st.one_of(
    st.sampled_from(
        [
            "<p>", "</p>", "<h1>", "</h1>", "<li>", "</li>", "<b>", "</b>", "<div>", "</div>", "<br>",
            "<script>var a='<p>x</p>';</script>", "<style>p{}</style>", "&amp;", "&eacute;", "&#x41;", "&bogus",
            "<pre>  a\n\tb </pre>", "<!-- c -->", "<table><tr><td>1</td><td>2</td></tr></table>",
        ]
    ),
    WORDS,
    st.text(max_size=20),
)


@settings(**SETTINGS)
@given(parts=st.lists(HTML_PARTS, max_size=40), size=st.sampled_from([20, 200]))
def test_html_invariants_and_source_contract(parts, size):
    text = "<html>" + "".join(parts)
    p = HTMLNodeParser(tags=["p", "h1", "li"], chunk_size=size, tokenizer=TOK)
    doc = Document(text=text, id_="h")
    nodes = assert_invariants(p, doc, tokenizer=TOK, chunk_size=size, exact_offsets=False, coverage=False)
    for n in nodes:
        assert n.text and n.text == n.text.strip()
        src = text[n.start_char_idx : n.end_char_idx]
        # every word comes from the source's text; a word longer than the budget may be cut (hypothesis
        # found '…&bogus' cut to '…&bog' at chunk_size 20), so a word is a piece of a source word
        source = " ".join(html_text(src).split())
        assert all(w in source for w in n.text.split()), (n.text, source)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40,
)


@settings(**SETTINGS)
@given(value=JSON_VALUES, indent=st.sampled_from([None, 2]), size=st.sampled_from([30, 300]))
def test_json_invariants(value, indent, size):
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    p = JSONNodeParser(chunk_size=size, tokenizer=TOK)
    doc = Document(text=text, id_="j")
    nodes = assert_invariants(p, doc, tokenizer=TOK, chunk_size=size, exact_offsets=False, coverage=False)
    assert nodes


RENDERED_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.lists(WORDS, max_size=30).map("".join).filter(lambda t: "\n" not in t and "\r" not in t),
    lambda inner: st.lists(inner, min_size=1, max_size=6)
    | st.dictionaries(st.from_regex(r"[a-z_中文]{1,8}", fullmatch=True), inner, min_size=1, max_size=6),
    max_leaves=40,
).filter(lambda v: isinstance(v, (list, dict)))


@settings(**SETTINGS)
@given(value=RENDERED_VALUES, size=st.sampled_from([24, 60, 300]))
def test_json_reader_rendering_is_cut_at_its_structure(value, size):
    """``SimpleDirectoryReader`` renders a ``.json`` file as YAML-like text (``json_to_text``), which
    JSONNodeParser sentence-split as "not JSON" (a chunk could end with ``name:`` and the next begin
    with its value); it is cut at its structure, as exact slices of the document."""
    from ragloom.readers import json_to_text

    text = json_to_text(value)
    p = JSONNodeParser(chunk_size=size, tokenizer=TOK)
    doc = Document(text=text, id_="rendered.json")
    nodes = assert_invariants(p, doc, tokenizer=TOK, chunk_size=size)
    assert nodes
    for n in nodes:  # a list item's lone "-" line (then its first key) stays with what follows it
        e = n.end_char_idx
        last_line = text[text.rfind("\n", 0, e) + 1 : e]
        assert not (last_line.strip() == "-" and last_line.endswith("-") and text.startswith("\n", e)), n.text
    # a line that fits the budget with room to spare is never cut: a key stays with its value
    pos = 0
    for line in text.split("\n"):
        a, b = pos + len(line) - len(line.lstrip()), pos + len(line.rstrip())
        pos += len(line) + 1
        if a < b and TOK.count(text[a:b]) <= size // 3:
            assert any(n.start_char_idx <= a and b <= n.end_char_idx for n in nodes), (line, [x.text for x in nodes])


PY_LINES = st.sampled_from([
    "def f(x):\n", "    return x  # 中文注释\n", "class A:\n", "    def m(self):\n", "        pass\n",
    "# 注释：字符不是字节\n", "x = '😀' * 3\n", "\n", "if x:\n", "    y = [\n        1,\n        2,\n    ]\n",
    "s = '''多行\n字符串'''\n", "\tz = 1\n", "@decorator\n", "import os\n",
])


@settings(**SETTINGS)
@given(
    lines=st.lists(PY_LINES, max_size=60),
    lim=st.sampled_from([(3, 80, 30), (40, 1500, None), (10, 300, 60)]),
    numbers=st.booleans(),
)
def test_code_invariants(lines, lim, numbers):
    pytest.importorskip("tree_sitter_python")
    chunk_lines, max_chars, size = lim
    text = "".join(lines)
    s = CodeSplitter(language="python", chunk_lines=chunk_lines, chunk_lines_overlap=2, max_chars=max_chars,
                     chunk_size=size, tokenizer=TOK, line_numbers=numbers)
    doc = Document(text=text, id_="py")
    nodes = assert_invariants(s, doc, tokenizer=TOK if size else None, chunk_size=size, exact_offsets=not numbers)
    for n in nodes:
        assert n.text.count("\n") + 1 <= chunk_lines and len(n.text) <= max_chars
        assert 1 <= n.metadata["start_line"] <= n.metadata["end_line"]
