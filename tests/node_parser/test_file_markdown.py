"""MarkdownNodeParser: CommonMark sections, header paths, exact offsets, budgets."""

from invariants import assert_invariants

from ragloom.node_parser import MarkdownNodeParser
from ragloom.schema import Document, MetadataMode


def _nodes(text, **kw):
    kw.setdefault("tokenizer", "cl100k_base")
    p = MarkdownNodeParser(**kw)
    doc = Document(text=text, id_="md")
    return assert_invariants(p, doc, tokenizer=p.tokenizer, chunk_size=p.chunk_size), doc


def test_llamaindex_style_call():
    p = MarkdownNodeParser()
    nodes = p.get_nodes_from_documents([Document(text="# T\n\nhello\n\n## U\n\nworld\n", id_="x")])
    assert [n.metadata["header_path_list"] for n in nodes] == [["T"], ["T", "U"]]
    # LlamaIndex's string form: the titles above the section's own header
    assert [n.metadata["header_path"] for n in nodes] == ["/", "/T/"]
    assert p(nodes[:0]) == []


def test_hash_comment_in_backtick_and_tilde_fences_is_not_a_header():
    text = "# Setup\n\n```bash\n# install it\npip install x\n```\n\n~~~\n# also a comment\n~~~\n\nafter\n"
    nodes, _ = _nodes(text)
    assert len(nodes) == 1
    assert nodes[0].metadata["header_path_list"] == ["Setup"]
    assert "# install it" in nodes[0].text and "# also a comment" in nodes[0].text


def test_preamble_before_first_header_is_kept():
    nodes, _ = _nodes("Some intro.\n\n# First\n\nbody\n")
    assert nodes[0].text == "Some intro."
    assert nodes[0].metadata["header_path_list"] == []
    assert nodes[1].metadata["header_path_list"] == ["First"]
    assert [n.metadata["header_path"] for n in nodes] == ["/", "/"]


def test_h1_then_two_h3_are_siblings():
    nodes, _ = _nodes("# A\n\na\n\n### B\n\nb\n\n### C\n\nc\n")
    assert [n.metadata["header_path_list"] for n in nodes] == [["A"], ["A", "B"], ["A", "C"]]
    assert [n.metadata["header_path"] for n in nodes] == ["/", "/A/", "/A/"]
    assert nodes[2].metadata["header_path_display"] == "A"  # "### C" is in the text


def test_header_path_separator_and_deep_path():
    text = "# A\n\na\n\n## B\n\nb\n\n### C\n\nc\n"
    nodes, _ = _nodes(text, header_path_separator="::")
    assert [n.metadata["header_path"] for n in nodes] == ["::", "::A::", "::A::B::"]
    assert nodes[2].metadata["header_path_list"] == ["A", "B", "C"]
    for n in nodes:  # both forms are hidden from the embed and LLM views
        for mode in (MetadataMode.EMBED, MetadataMode.LLM):
            assert "header_path:" not in n.get_content(mode) and "header_path_list" not in n.get_content(mode)
    default_ids = [n.id_ for n in _nodes(text)[0]]
    assert [n.id_ for n in nodes] != default_ids  # the separator is part of the configuration
    for bad in ("", None, 3):
        try:
            MarkdownNodeParser(header_path_separator=bad)
        except ValueError as exc:
            assert "header_path_separator" in str(exc)
        else:
            raise AssertionError(f"header_path_separator={bad!r} accepted")


def test_slash_in_title_is_unambiguous():
    nodes, _ = _nodes("# a/b\n\nx\n\n## c\n\ny\n")
    assert nodes[1].metadata["header_path_list"] == ["a/b", "c"]
    assert nodes[1].metadata["header_path"] == "/a/b/"  # LlamaIndex's string form cannot tell
    # the list is hidden from embed/LLM views, the display string is visible
    emb = nodes[1].get_content(MetadataMode.EMBED)
    assert "header_path_display: a/b\n" in emb and "## c" in emb and "['a/b'" not in emb


def test_markdown_title_not_embedded_twice():
    """Issue 10 #5: a section's title was embedded twice (display metadata and heading line)."""
    text = "# Installation Guide\n\nIntro.\n\n## Configure Proxies\n\nSet the variable.\n"
    for kw in ({}, {"chunk_size": None}):
        nodes, _ = _nodes(text, **kw)
        assert [n.metadata["header_path_list"] for n in nodes] == [
            ["Installation Guide"], ["Installation Guide", "Configure Proxies"]
        ]
        for n in nodes:
            for mode in (MetadataMode.EMBED, MetadataMode.LLM):
                content = n.get_content(mode)
                assert content.count("Configure Proxies") <= 1, content
                assert content.count("Installation Guide") == 1, content  # the ancestor is kept
        assert "header_path_display" not in nodes[0].metadata
        assert nodes[1].metadata["header_path_display"] == "Installation Guide"
    # a section cut into pieces: the pieces after the heading carry the full path, once
    body = "\n\n".join(f"Paragraph {i} of the proxy settings, with words." for i in range(40))
    nodes, _ = _nodes("# Guide\n\n## Proxies\n\n" + body + "\n", chunk_size=48)
    pieces = [n for n in nodes if n.metadata["header_path_list"] == ["Guide", "Proxies"]]
    assert len(pieces) > 2 and pieces[0].text.startswith("## Proxies")
    assert pieces[0].metadata["header_path_display"] == "Guide"
    assert all(p.metadata["header_path_display"] == "Guide > Proxies" for p in pieces[1:])
    for p in pieces:
        emb = p.get_content(MetadataMode.EMBED)
        assert emb.count("Guide") == 1 and emb.count("## Proxies") + emb.count("> Proxies") == 1


def test_tab_and_nbsp_inside_fence_byte_exact():
    text = "# Code\n\n```python\ndef f():\n\treturn 1\u00a0 # nbsp\n```\n"
    nodes, doc = _nodes(text)
    assert "\treturn 1\u00a0 # nbsp" in nodes[0].text
    assert doc.text[nodes[0].start_char_idx : nodes[0].end_char_idx] == nodes[0].text


def test_oversized_section_is_split_within_budget():
    body = "\n\n".join(f"Paragraph {i} has several words in it to take tokens." for i in range(60))
    text = "# Big\n\n" + body + "\n\n```\n" + "\n".join(f"line {i}" for i in range(80)) + "\n```\n"
    nodes, _ = _nodes(text, chunk_size=64)
    assert len(nodes) > 5
    assert all(n.metadata["header_path_list"] == ["Big"] for n in nodes)


def test_setext_and_crlf_headers():
    text = "Title\r\n=====\r\n\r\nbody\r\n\r\nSub\r\n---\r\n\r\nmore\r\n"
    nodes, _ = _nodes(text)
    assert [n.metadata["header_path_list"] for n in nodes] == [["Title"], ["Title", "Sub"]]
