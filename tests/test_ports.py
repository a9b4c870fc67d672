"""Issue 14, "ports without surprises": LlamaIndex code that ragloom must run as written.

Node methods (pydantic's ``model_dump`` & co.), constructors (``QueryBundle("q")``,
``Document(doc_id=...)``, ``TokenTextSplitter(keep_whitespaces=...)``,
``SimpleDirectoryReader(filename_as_id=True)``), reader import paths, and similarity cutoffs per
retrieval mode on a real index.  The Hugging Face embedding, Markdown header paths and short
legacy-encoded files have their tests beside their packages
(``tests/embeddings/test_huggingface_ports.py``, ``tests/node_parser/test_file_markdown.py``,
``tests/readers/test_short_encodings.py``).
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.node_parser import TokenTextSplitter
from ragloom.readers.base import BaseReader
from ragloom.schema import (
    BaseNode,
    Document,
    IndexNode,
    NodeRelationship,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
    node_from_json,
)

# -- 1. node methods -------------------------------------------------------------------------------

#: The keys pydantic gives a LlamaIndex TextNode's model_dump (BaseNode's fields, TextNode's, class_name).
LLAMAINDEX_TEXT_NODE_KEYS = {
    "id_", "embedding", "metadata", "excluded_embed_metadata_keys", "excluded_llm_metadata_keys",
    "relationships", "metadata_template", "metadata_separator", "text", "mimetype", "start_char_idx",
    "end_char_idx", "text_template", "class_name",
}


def _node() -> TextNode:
    doc = Document(id_="doc-1", text="whole text", metadata={"file_name": "a.md"})
    return TextNode(
        id_="n-1",
        text="Green tea 绿茶",
        embedding=[0.25, -0.5],
        metadata={"day": datetime.date(2024, 5, 1), "page": 3},
        excluded_llm_metadata_keys=["page"],
        relationships={
            NodeRelationship.SOURCE: doc.as_related_node_info(),
            NodeRelationship.CHILD: [RelatedNodeInfo(node_id="c1"), RelatedNodeInfo(node_id="c2")],
        },
        start_char_idx=0,
        end_char_idx=10,
    )


def test_model_dump_has_llamaindex_keys_and_values():
    node = _node()
    data = node.model_dump()
    assert set(data) == LLAMAINDEX_TEXT_NODE_KEYS
    assert data["class_name"] == "TextNode" and data["id_"] == "n-1" and data["text"] == "Green tea 绿茶"
    assert data["embedding"] == [0.25, -0.5] and data["start_char_idx"] == 0 and data["end_char_idx"] == 10
    assert data["metadata"] == {"day": datetime.date(2024, 5, 1), "page": 3}  # python mode keeps objects
    assert data["excluded_llm_metadata_keys"] == ["page"] and data["metadata_separator"] == "\n"
    # relationships: keyed by the relationship's value, entries as pydantic dumps RelatedNodeInfo
    source = data["relationships"]["1"]
    assert source["node_id"] == "doc-1" and source["node_type"] == "4" and source["class_name"] == "RelatedNodeInfo"
    assert source["hash"] == Document(id_="doc-1", text="whole text", metadata={"file_name": "a.md"}).hash
    assert [c["node_id"] for c in data["relationships"]["5"]] == ["c1", "c2"]
    assert all(c["class_name"] == "RelatedNodeInfo" for c in data["relationships"]["5"])
    # a dump is a copy: changing it leaves the node alone
    data["metadata"]["page"] = 99
    assert node.metadata["page"] == 3


def test_document_dump_has_text_and_document_class_name():
    doc = Document(id_="d", text="hello", metadata={"k": "v"})
    data = doc.model_dump()
    assert data["class_name"] == "Document" and data["text"] == "hello" and data["id_"] == "d"
    assert set(data) == LLAMAINDEX_TEXT_NODE_KEYS  # no text_resource & co. (documented difference)


def test_json_mode_and_model_dump_json_agree():
    node = _node()
    as_json = node.model_dump(mode="json")
    assert as_json["metadata"]["day"] == "2024-05-01"
    text = node.model_dump_json()
    assert "绿茶" in text  # written as it is, as pydantic does
    assert json.loads(text) == as_json
    pretty = node.model_dump_json(indent=2)
    assert "\n  \"id_\": \"n-1\"" in pretty and json.loads(pretty) == as_json
    assert node.json() == text and node.dict() == node.model_dump()


def test_include_exclude_none_and_aliases():
    node = _node()
    assert set(node.model_dump(include={"id_", "text"})) == {"id_", "text"}
    assert "embedding" not in node.model_dump(exclude=["embedding"])
    bare = TextNode(text="x")
    assert "start_char_idx" not in bare.model_dump(exclude_none=True)
    assert "start_char_idx" in bare.model_dump()
    aliased = node.model_dump(by_alias=True)
    assert aliased["extra_info"] == node.metadata and aliased["metadata_seperator"] == "\n"
    assert "metadata" not in aliased
    assert json.loads(node.json(include={"id_"})) == {"id_": "n-1"}


def test_dumps_read_back():
    node = _node()
    for mode, by_alias in (("python", False), ("python", True), ("json", False)):
        back = BaseNode.from_dict(node.model_dump(mode=mode, by_alias=by_alias))
        assert isinstance(back, TextNode) and back.id_ == node.id_ and back.text == node.text
        assert back.relationships[NodeRelationship.SOURCE].node_id == "doc-1"
        assert back.relationships[NodeRelationship.SOURCE].hash == node.relationships[NodeRelationship.SOURCE].hash
        assert back.metadata["page"] == 3 and back.embedding == [0.25, -0.5]
        assert back.metadata["day"] == (datetime.date(2024, 5, 1) if mode == "python" else "2024-05-01")
    assert node_from_json(node.model_dump_json()).model_dump(mode="json") == node.model_dump(mode="json")
    doc = Document(id_="d", text="t")
    assert isinstance(BaseNode.from_dict(doc.model_dump()), Document)


def test_model_copy_update_and_deep():
    node = _node()
    shallow = node.model_copy(update={"text": "changed", "id_": "n-2"})
    assert (shallow.text, shallow.id_) == ("changed", "n-2") and (node.text, node.id_) == ("Green tea 绿茶", "n-1")
    assert shallow.metadata is node.metadata  # pydantic's model_copy is shallow too
    deep = node.model_copy(deep=True)
    assert deep.metadata == node.metadata and deep.metadata is not node.metadata
    deep.metadata["page"] = 7
    deep.relationships[NodeRelationship.CHILD].append(RelatedNodeInfo(node_id="c3"))
    assert node.metadata["page"] == 3 and len(node.relationships[NodeRelationship.CHILD]) == 2
    assert isinstance(Document(text="x").model_copy(), Document)
    index_node = IndexNode(text="summary", index_id="other")
    assert index_node.model_copy(update={"index_id": "third"}).index_id == "third"


def test_bad_arguments_are_refused():
    node = _node()
    with pytest.raises(ValueError, match="mode"):
        node.model_dump(mode="yaml")
    with pytest.raises(ValueError, match="include"):
        node.model_dump(include="id_")
    with pytest.raises(ValueError, match="exclude"):
        node.model_dump(exclude={"metadata": {"page"}})
    with pytest.raises(ValueError, match="indent"):
        node.model_dump_json(indent=-1)
    with pytest.raises(TypeError):
        node.model_copy(update={"no_such_field": 1})
    with pytest.raises(TypeError):
        node.model_dump(exclude_unset=True)  # type: ignore[call-arg]


# -- 2. constructors -------------------------------------------------------------------------------


def test_query_bundle_positional_as_llamaindex():
    q = QueryBundle("what is green tea?")
    assert q.query_str == "what is green tea?" and q.embedding_strs == ["what is green tea?"] and str(q) == q.query_str
    q2 = QueryBundle("q", None, ["a", "b"], [0.1, 0.2])
    assert (q2.image_path, q2.custom_embedding_strs, q2.embedding) == (None, ["a", "b"], [0.1, 0.2])
    assert q2.embedding_strs == ["a", "b"]
    assert QueryBundle(query_str="kw").query_str == "kw"


def test_document_doc_id_and_extra_info():
    doc = Document(doc_id="my-id", text="t", extra_info={"a": 1})
    assert doc.id_ == "my-id" and doc.doc_id == "my-id" and doc.node_id == "my-id" and doc.metadata == {"a": 1}
    doc.doc_id = "other"
    assert doc.id_ == "other"
    with pytest.raises(ValueError, match="doc_id"):
        Document(doc_id="a", id_="b")
    with pytest.raises(ValueError, match="extra_info"):
        Document(extra_info={}, metadata={})
    # stored documents decode as before (the constructor hook is not on the decode path)
    again = node_from_json(doc.to_json())
    assert isinstance(again, Document) and again.id_ == "other" and again.metadata == {"a": 1}


_WORDS = st.sampled_from(["tea", "green", "bicycle", "chain", "oil", "river", "mountain", "茶", "自行车", "a", "of"])
_SPACES = st.sampled_from([" ", " ", " ", "  ", "\n", "\n\n", "\t", " \n "])


@st.composite
def _texts(draw: Any) -> str:
    words = draw(st.lists(_WORDS, min_size=1, max_size=60))
    seps = draw(st.lists(_SPACES, min_size=len(words) + 1, max_size=len(words) + 1))
    lead = seps[0] if draw(st.booleans()) else ""
    trail = seps[-1] if draw(st.booleans()) else ""
    return lead + "".join(w + s for w, s in zip(words, seps[1:-1] + [""], strict=True)) + trail


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts(), size=st.integers(min_value=6, max_value=40))
def test_keep_whitespaces_keeps_offsets_budget_and_content(text: str, size: int) -> None:
    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    kept = TokenTextSplitter(chunk_size=size, chunk_overlap=0, tokenizer=tok, keep_whitespaces=True)
    stripped = TokenTextSplitter(chunk_size=size, chunk_overlap=0, tokenizer=tok)
    doc = Document(id_="d", text=text)
    nodes = kept.get_nodes_from_documents([doc])
    plain = stripped.get_nodes_from_documents([doc])
    assert len(nodes) == len(plain)
    pos = 0
    for node, base in zip(nodes, plain, strict=True):
        assert text[node.start_char_idx:node.end_char_idx] == node.text  # exact offsets
        assert tok.count(node.text) <= size  # never over budget
        assert node.start_char_idx >= pos  # in order, no overlap (chunk_overlap=0)
        assert text[pos:node.start_char_idx].strip() == ""  # only whitespace is ever left out
        # the same words as the stripped chunk, with whitespace around it
        assert node.text.strip() == base.text and base.text == text[base.start_char_idx:base.end_char_idx]
        assert node.start_char_idx <= base.start_char_idx and node.end_char_idx >= base.end_char_idx
        pos = node.end_char_idx
    assert text[pos:].strip() == ""
    assert all(n.text == n.text.strip() for n in plain)  # keep_whitespaces=False strips (LlamaIndex's default)


def test_keep_whitespaces_tiles_prose_and_changes_ids_only_when_set():
    text = "  " + " ".join(f"word{i} and more text" for i in range(60)) + "\n"
    kept = TokenTextSplitter(chunk_size=400, chunk_overlap=0, tokenizer="cl100k_base", keep_whitespaces=True)
    chunks = kept.split_text(text)
    assert len(chunks) == 1 and chunks[0] == text
    small = TokenTextSplitter(chunk_size=30, chunk_overlap=0, tokenizer="cl100k_base", keep_whitespaces=True)
    pieces = small.split_text(" ".join(f"word{i} and more text" for i in range(60)))
    assert len(pieces) > 3 and "".join(pieces) == " ".join(f"word{i} and more text" for i in range(60))
    assert all(p.startswith(" ") for p in pieces[1:])  # the separator leads, as LlamaIndex's splits
    default_ids = [n.id_ for n in TokenTextSplitter(chunk_size=30, chunk_overlap=0, tokenizer="cl100k_base")(
        [Document(id_="d", text=text)])]
    false_ids = [n.id_ for n in TokenTextSplitter(chunk_size=30, chunk_overlap=0, tokenizer="cl100k_base",
                                                  keep_whitespaces=False)([Document(id_="d", text=text)])]
    true_ids = [n.id_ for n in small([Document(id_="d", text=text)])]
    assert default_ids == false_ids and set(true_ids).isdisjoint(default_ids)
    with pytest.raises(ValueError, match="keep_whitespaces"):
        TokenTextSplitter(keep_whitespaces="yes")  # type: ignore[arg-type]


class _TwoDocReader(BaseReader):
    """A LlamaIndex-style reader (it sets no ids of its own)."""

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        text = Path(file).read_text(encoding="utf-8")
        return [Document(text=part, metadata=dict(extra_info or {})) for part in text.split("---")]


def test_filename_as_id_gives_path_ids(tmp_path: Path):
    from ragloom.readers import SimpleDirectoryReader

    (tmp_path / "a.txt").write_text("plain text file", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Title\n\nmarkdown body", encoding="utf-8")
    (tmp_path / "c.jsonl").write_text('{"q": "one"}\n{"q": "two"}\n', encoding="utf-8")
    (tmp_path / "d.two").write_text("first part---second part", encoding="utf-8")
    base = Path(os.path.realpath(tmp_path)).as_posix()
    expected = {f"{base}/a.txt", f"{base}/b.md", f"{base}/c.jsonl_part_0", f"{base}/c.jsonl_part_1",
                f"{base}/d.two_part_0", f"{base}/d.two_part_1"}
    for flag in (True, False):  # ragloom's ids are always file ids (LlamaIndex's False gives random ones)
        docs = SimpleDirectoryReader(str(tmp_path), filename_as_id=flag,
                                     file_extractor={".two": _TwoDocReader()}).load_data()
        assert {d.id_ for d in docs} == expected
        assert {d.doc_id for d in docs if d.id_.endswith("d.two_part_1")} == {f"{base}/d.two_part_1"}
    again = SimpleDirectoryReader(input_files=[str(tmp_path / "c.jsonl")], filename_as_id=True).load_data()
    assert [d.id_ for d in again] == [f"{base}/c.jsonl_part_0", f"{base}/c.jsonl_part_1"]


# -- 5. reader import paths ------------------------------------------------------------------------


def test_llamaindex_reader_import_paths(tmp_path: Path):
    import ragloom.readers as readers
    from ragloom.readers.csv_reader import CSVReader as OwnCSV
    from ragloom.readers.docx_reader import DocxReader as OwnDocx
    from ragloom.readers.epub import EpubReader as OwnEpub
    from ragloom.readers.file import (  # llama_index.readers.file
        CSVReader,
        DocxReader,
        EpubReader,
        FlatReader,
        PDFReader,
        PptxReader,
        RTFReader,
        SimpleDirectoryReader,
    )
    from ragloom.readers.file.base import SimpleDirectoryReader as SDR2  # llama_index.core.readers.file.base
    from ragloom.readers.json import JSONReader  # llama_index.readers.json / llama_index.core.readers.json
    from ragloom.readers.office import PptxReader as OwnPptx
    from ragloom.readers.rtf_reader import RTFReader as OwnRTF

    assert FlatReader is readers.FlatReader and PDFReader is readers.PDFReader and JSONReader is readers.JSONReader
    assert SimpleDirectoryReader is readers.SimpleDirectoryReader and SDR2 is readers.SimpleDirectoryReader
    assert (CSVReader, DocxReader, EpubReader, PptxReader, RTFReader) == (OwnCSV, OwnDocx, OwnEpub, OwnPptx, OwnRTF)
    from ragloom.readers.base import BaseReader as Base  # llama_index.core.readers.base

    assert all(issubclass(c, Base) for c in (CSVReader, DocxReader, EpubReader, FlatReader, PDFReader, PptxReader,
                                               RTFReader, JSONReader))
    f = tmp_path / "notes.py"
    f.write_text("print('hi')\n", encoding="utf-8")
    [doc] = FlatReader().load_data(f)
    assert doc.text == "print('hi')\n" and doc.metadata["extension"] == ".py"
    j = tmp_path / "r.jsonl"
    j.write_text('{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    assert len(JSONReader(is_jsonl=True).load_data(j)) == 2


def test_readers_ragloom_lacks_say_what_to_use():
    with pytest.raises(ImportError, match="MarkdownNodeParser"):
        from ragloom.readers.file import MarkdownReader  # noqa: F401
    with pytest.raises(ImportError, match="CSVReader"):
        from ragloom.readers.file import PandasCSVReader  # noqa: F401
    with pytest.raises(ImportError, match="cannot import name"):
        from ragloom.readers.file import NoSuchReader  # noqa: F401
    import ragloom.readers.file as file_readers

    assert not hasattr(file_readers, "NoSuchReader")
    assert set(file_readers.NOT_PROVIDED).isdisjoint(file_readers.__all__)


# -- 7. similarity cutoffs per retrieval mode ------------------------------------------------------

_CORPUS = {
    "tea": "Green tea is brewed from unoxidised leaves of the tea plant. Steep it at 80 degrees for two minutes.",
    "bike": "A bicycle chain needs oil every few hundred kilometres; clean it before you lubricate it.",
    "rome": "The Roman Empire built roads across Europe; the Via Appia connected Rome to Brindisi.",
    "python": "Python lists are mutable sequences; tuples are immutable and can be dictionary keys.",
    "bread": "Sourdough bread rises with wild yeast and lactic acid bacteria from a starter.",
    "hill": "The path up the hill is steep and rocky.",  # shares one word with the query
    "kitchen": "The walls of the kitchen are painted green.",  # shares one word with the query
}
QUERY = "how long should I steep green tea?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    from ragloom import StorageContext, VectorStoreIndex, load_index_from_storage
    from ragloom.embeddings import resolve_embed_model

    folder = tmp_path_factory.mktemp("cutoff")
    storage = StorageContext.from_defaults(persist_dir=str(folder), create_if_missing=True)
    docs = [Document(id_=k, text=v) for k, v in _CORPUS.items()]
    VectorStoreIndex.from_documents(docs, storage_context=storage, embed_model=resolve_embed_model("default"))
    storage.persist(persist_dir=str(folder))
    return load_index_from_storage(StorageContext.from_defaults(persist_dir=str(folder)))


def _kept(nodes: list, cutoff: float, query: str = QUERY) -> List[str]:
    from ragloom.postprocessor import SimilarityPostprocessor

    return [n.node.ref_doc_id for n in SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(
        nodes, query_str=query)]


def test_cutoff_dense_cosine(index):
    dense = index.as_retriever(similarity_top_k=7, vector_store_query_mode="default")
    nodes = dense.retrieve(QUERY)
    assert len(nodes) == 7 and all(-1.0 <= n.score <= 1.0 for n in nodes)
    assert nodes[0].score > 0.6 and nodes[1].score < 0.25
    assert _kept(nodes, 0.3) == ["tea"]  # the docstring's value for all-MiniLM-L6-v2
    off = "quantum chromodynamics of gluons"
    assert _kept(dense.retrieve(off), 0.3, off) == []


def test_default_retriever_is_hybrid(index):
    """The docstring's warning: as_retriever() gives fused scores on the SQLite store, not cosines."""
    plain = [(n.node.ref_doc_id, n.score) for n in index.as_retriever(similarity_top_k=7).retrieve(QUERY)]
    hybrid = index.as_retriever(similarity_top_k=7, vector_store_query_mode="hybrid").retrieve(QUERY)
    dense = index.as_retriever(similarity_top_k=7, vector_store_query_mode="default").retrieve(QUERY)
    assert plain == [(n.node.ref_doc_id, n.score) for n in hybrid]
    assert plain != [(n.node.ref_doc_id, n.score) for n in dense]


def test_cutoff_keyword_bm25(index):
    from ragloom.retrievers.bm25 import BM25Retriever

    for nodes in (index.as_retriever(similarity_top_k=7, vector_store_query_mode="text_search").retrieve(QUERY),
                  BM25Retriever.from_defaults(index=index, similarity_top_k=7).retrieve(QUERY)):
        got = {n.node.ref_doc_id for n in nodes}
        assert got == {"tea", "hill", "kitchen"}  # only nodes holding a query word come back
        assert _kept(nodes, 2.0) == ["tea"]  # one shared common word scores about 1, several about 3


def test_cutoff_hybrid_fused(index):
    nodes = index.as_retriever(similarity_top_k=7, vector_store_query_mode="hybrid").retrieve(QUERY)
    assert len(nodes) == 7 and all(0.0 <= n.score <= 1.0 for n in nodes)
    assert _kept(nodes, 0.5) == ["tea"]
    # fused scores are relative: an off-topic query's best candidate still scores well above 0,
    # but (no query word matches, alpha=0.5) never above 0.5
    off = index.as_retriever(similarity_top_k=7, vector_store_query_mode="hybrid").retrieve(
        "quantum chromodynamics of gluons")
    assert off and max(n.score for n in off) > 0.2
    assert _kept(off, 0.5, "quantum chromodynamics of gluons") == []
