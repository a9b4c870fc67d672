"""CodeSplitter on tree-sitter: definitions, budgets, character offsets, line numbers."""

import logging
from pathlib import Path

import pytest
from invariants import assert_invariants

from ragloom.node_parser import CodeSplitter
from ragloom.readers.flat import FlatReader
from ragloom.schema import Document

pytest.importorskip("tree_sitter")
pytest.importorskip("tree_sitter_python")

PY_ZH = '''import os

# 这是一个中文注释，用来测试字符偏移（不是字节偏移）
def search(query: str) -> list:
    """搜索：返回匹配的结果。"""
    # 中文注释：按空格切分
    return [q for q in query.split()]


class Index:
    """索引类。"""

    def add(self, x):
        # 添加一个元素
        self.items.append(x)

    def get(self, i):
        return self.items[i]
'''


def test_llamaindex_style_on_flat_reader(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(PY_ZH, encoding="utf-8")
    docs = FlatReader().load_data(Path(f))
    splitter = CodeSplitter(language="python", chunk_lines=40, chunk_lines_overlap=15, max_chars=1500)
    nodes = splitter.get_nodes_from_documents(docs)
    assert len(nodes) == 1 and nodes[0].text == PY_ZH.strip()
    assert nodes[0].metadata["start_line"] == 1 and nodes[0].metadata["end_line"] == 18


def test_chinese_comments_char_offsets_and_definitions():
    doc = Document(text=PY_ZH, id_="zh")
    s = CodeSplitter(language="python", chunk_lines=8, chunk_lines_overlap=0, max_chars=400)
    nodes = assert_invariants(s, doc)
    texts = [n.text for n in nodes]
    assert any(
        "# 这是一个中文注释（不是字节偏移）\ndef search" in t or "# 这是一个中文注释" in t and "def search" in t
        for t in texts
    )
    assert all(t != "class Index:" for t in texts)  # a header is packed with its body
    assert any(t.startswith("class Index:") for t in texts)
    for n in nodes:
        lines = PY_ZH.split("\n")
        assert lines[n.metadata["start_line"] - 1].strip().startswith(n.text.split("\n")[0].strip())


def test_large_definition_split_at_inner_statements_with_overlap():
    body = "\n".join(f"    x{i} = compute({i})  # 第{i}步" for i in range(120))
    text = f"def big():\n{body}\n    return x0\n\n\ndef small():\n    return 1\n"
    doc = Document(text=text, id_="big")
    s = CodeSplitter(language="python", chunk_lines=30, chunk_lines_overlap=5, max_chars=1500)
    nodes = assert_invariants(s, doc)
    for n in nodes:
        assert n.text.count("\n") + 1 <= 30 and len(n.text) <= 1500
        for line in n.text.split("\n")[1:]:  # never cut inside a statement
            assert line.strip() == "" or line.startswith("    x") or line.startswith(("    return", "def "))
    assert nodes[-1].text.startswith("def small") or "def small" in nodes[-1].text
    # overlap: consecutive pieces of big() share lines
    assert nodes[1].metadata["start_line"] <= nodes[0].metadata["end_line"]


def test_token_budget_and_line_number_prefixes(cl100k):
    doc = Document(text=PY_ZH * 3, id_="tok", metadata={"file_name": "x.py"})
    s = CodeSplitter(language="python", chunk_size=60, tokenizer=cl100k, line_numbers=True)
    nodes = s.get_nodes_from_documents([doc])
    assert len(nodes) > 3
    for n in nodes:
        assert cl100k.count(n.get_content("embed")) <= 60
        first = n.text.split("\n")[0]
        assert first.startswith(f"{n.metadata['start_line']}|")
        raw = "\n".join(line.split("|", 1)[1] for line in n.text.split("\n"))
        assert doc.text[n.start_char_idx : n.end_char_idx] == raw


@pytest.mark.parametrize(
    "lang,src",
    [
        ("java", "class A {\n  // 注释\n  int f() { return 1; }\n  void g() {}\n}\n"),
        ("javascript", "function f() { return <div>x</div>; }\nconst g = () => 1;\n"),
        ("typescript", "interface I { a: number }\nexport function f(x: I): number { return x.a }\n"),
        ("tsx", "export const C = (p: {a: string}) => <b>{p.a}</b>;\n"),
        ("go", "package main\n\nfunc main() {\n\tprintln(\"你好\")\n}\n"),
        ("rust", "fn main() {\n    println!(\"你好\");\n}\n"),
        ("c", "int main(void) { return 0; }\n"),
        ("cpp", "namespace n { class A { public: int f() { return 1; } }; }\n"),
        ("c#", "namespace N { class A { int F() { return 1; } } }\n"),
    ],
)
def test_languages(lang, src):
    s = CodeSplitter(language=lang)
    if not s.available:
        pytest.skip(f"no grammar for {lang}")
    nodes = assert_invariants(s, Document(text=src, id_=lang))
    assert nodes


def test_unknown_language_and_parse_error_fall_back(caplog):
    with caplog.at_level(logging.WARNING):
        nodes = CodeSplitter(language="cobol", chunk_lines=2).get_nodes_from_documents(
            [Document(text="a\nb\nc\n", id_="u")]
        )
    assert [n.text for n in nodes] == ["a\nb", "c"] and "unknown language" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        nodes = CodeSplitter(language="python").get_nodes_from_documents([Document(text="def (:\n  ]]\n", id_="e")])
    assert nodes and "syntax errors" in caplog.text


@pytest.mark.parametrize("width", [0, 3])
def test_limit_sizer_limits_are_exact(cl100k, width):
    """LimitSizer (CodeSplitter's size model for the shared packer): ``limit`` is the furthest
    position within the token, line and character limits (one line at least), and a span's size
    is within the room exactly when all three are."""
    import random

    from ragloom.node_parser.text.engine import LimitSizer, make_sizers

    rnd = random.Random(width)
    text = "".join(rnd.choice(["ab ", "c\n", "\n", "def x():\n", "  y = 1\n", "中文"]) for _ in range(300))
    base = make_sizers(cl100k, [text])[0]
    room, max_lines, max_chars = 50, 7, 120
    sizer = LimitSizer(base, room, max_lines, max_chars, width)

    def within(a, p, budget):
        lines = text.count("\n", a, p - 1) + 1
        chars = p - a + lines * width
        return (
            base.tokens(a, p) <= budget
            and lines <= max(1, max_lines * budget // room)
            and chars <= max_chars * budget // room
        )

    for _ in range(80):
        a = rnd.randrange(len(text) - 1)
        budget = rnd.randrange(5, room + 1)
        p = sizer.limit(a, budget)
        assert p == len(text) or p == a + 1 or within(a, p, budget)
        assert p == len(text) or not within(a, p + 1, budget)
        b = rnd.randrange(2, len(text) + 1)
        assert within(a, b, room) == (sizer.tokens(a, b) <= room) if a < b else True
