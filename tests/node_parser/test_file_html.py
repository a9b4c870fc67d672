"""HTMLNodeParser: block tags, inline tags in sentence order, offsets into the HTML source."""

from invariants import assert_invariants

from ragloom.node_parser import HTMLNodeParser
from ragloom.node_parser.file.html import html_text
from ragloom.schema import Document

PAGE = (
    "<html><head><title>T</title><style>p { color: red }</style>"
    "<script>document.write('<p>no</p>')</script></head><body>"
    "<h1>Caf&eacute; &amp; bar</h1>\n<p>This is a <b>bold</b> move &#8212; really.</p>"
    "<div>loose <span>div</span> text</div><ul><li>one</li><li>two <a href='#'>link</a></li></ul>"
    "</body></html>"
)


def _check_source_contract(doc, nodes):
    for n in nodes:
        src = doc.text[n.start_char_idx : n.end_char_idx]
        assert " ".join(html_text(src).split()) == " ".join(n.text.split()), (src, n.text)


def test_llamaindex_style_tags():
    p = HTMLNodeParser(tags=["p", "h1", "li"], tokenizer="cl100k_base")
    doc = Document(text=PAGE, id_="h")
    nodes = assert_invariants(
        p, doc, tokenizer=p.tokenizer, chunk_size=p.chunk_size, exact_offsets=False, coverage=False
    )
    texts = [n.text for n in nodes]
    assert "Café & bar" in texts
    assert "This is a bold move — really." in texts  # one bold word stays in its sentence
    assert "one" in texts and "two link" in texts
    assert not any("document.write" in t or "color" in t for t in texts)  # script/style dropped
    assert [n.metadata["tag"] for n in nodes if n.text == "one"] == ["li"]
    _check_source_contract(doc, nodes)


def test_default_tags_do_not_split_bold_words():
    nodes = HTMLNodeParser(tokenizer="cl100k_base").get_nodes_from_documents(
        [Document(text="<p>A <b>bold</b> word and <i>italic</i> one.</p>", id_="b")]
    )
    assert [n.text for n in nodes] == ["A bold word and italic one."]


def test_untagged_text_kept_or_dropped():
    doc = Document(text=PAGE, id_="h")
    kept = HTMLNodeParser(tags=["p"], tokenizer="cl100k_base").get_nodes_from_documents([doc])
    dropped = HTMLNodeParser(tags=["p"], keep_untagged_text=False, tokenizer="cl100k_base").get_nodes_from_documents(
        [doc]
    )
    assert "loose div text" in [n.text for n in kept]
    assert [n.text for n in dropped] == ["This is a bold move — really."]


def test_long_block_split_within_budget_with_source_spans():
    para = " ".join(f"Sentence number {i} is <b>here</b> &amp; there." for i in range(80))
    doc = Document(text=f"<p>{para}</p>", id_="long")
    p = HTMLNodeParser(tags=["p"], chunk_size=40, tokenizer="cl100k_base")
    nodes = assert_invariants(p, doc, tokenizer=p.tokenizer, chunk_size=40, exact_offsets=False, coverage=False)
    assert len(nodes) > 5
    _check_source_contract(doc, nodes)


def test_plain_text_falls_back_to_sentences(caplog):
    doc = Document(text="No markup here. Just text.", id_="t")
    nodes = HTMLNodeParser(tokenizer="cl100k_base").get_nodes_from_documents([doc])
    assert [n.text for n in nodes] == ["No markup here. Just text."]
    assert "falling back to sentence splitting" in caplog.text
