"""Extracted metadata and the embed budget: whatever the text and however long the LLM's answers,
the embed view of every node fits the embed model's input limit, extracted values are never cut,
and a key is left out of the embedded text only when it does not fit."""

from __future__ import annotations

import logging
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom.embeddings import HuggingFaceEmbedding  # noqa: E402
from ragloom.extractors import QuestionsAnsweredExtractor, SummaryExtractor, TitleExtractor  # noqa: E402
from ragloom.ingestion import IngestionPipeline  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.schema import DEFAULT_TEXT_NODE_TMPL, Document, MetadataMode  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402

WORDS = "harbour survey 北京 大学 budget 2024 crane 船舶 tide pilot 图书馆 ledger north 海关".split()
SENTENCES = ["The harbour survey ran late.", "船舶在港口停靠。", "Budget lines moved again!",
             "北京大学的图书馆很大。", "Pilots read the tide tables.", "A crane lifted forty boxes."]

ANSWER_LENGTHS = {"lengths": [5]}


def answer(prompt: str) -> str:
    """An answer of a prompt-dependent length (in words) from the current example's lengths."""
    lengths = ANSWER_LENGTHS["lengths"]
    n = lengths[zlib.crc32(prompt.encode()) % len(lengths)]
    return " ".join(WORDS[i % len(WORDS)] for i in range(n))


@pytest.fixture(scope="module")
def embed():
    return HuggingFaceEmbedding()


@pytest.fixture(scope="module")
def llm():
    with OpenAICompatibleServer(answer=answer) as srv:
        yield OpenAILike(model="m", api_base=srv.url, max_retries=0)


TEXT = st.one_of(
    st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=30).map(" ".join),
    st.lists(st.sampled_from(list("abc de,.!\n港口船舶。，") + WORDS), min_size=1, max_size=200).map("".join),
    st.text(min_size=1, max_size=200),
)


def _added_keys(extractors):
    keys = []
    for e in extractors:
        if isinstance(e, SummaryExtractor):
            keys += ["section_summary", "prev_section_summary", "next_section_summary"]
        elif isinstance(e, QuestionsAnsweredExtractor):
            keys.append("questions_this_excerpt_can_answer")
        else:
            keys.append("document_title")
    return keys


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, chunk_size=st.integers(16, 254), lengths=st.lists(st.integers(0, 260), min_size=1, max_size=4),
       rewrite=st.booleans(), embed_meta=st.booleans())
def test_embed_view_of_every_node_fits(embed, llm, text, chunk_size, lengths, rewrite, embed_meta):
    ANSWER_LENGTHS["lengths"] = lengths
    tok = embed.get_tokenizer()
    limit = embed.max_text_tokens
    doc = Document(text=text, metadata={"file_name": "harbour_report.txt"},
                   excluded_embed_metadata_keys=[] if embed_meta else ["file_name"])
    splitter = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=0, tokenizer=tok)
    nodes = splitter.get_nodes_from_documents([doc])
    for n in nodes:  # the splitter's guarantee, the premise of the extractors'
        assert tok.count(n.get_content(MetadataMode.EMBED)) <= chunk_size <= limit
    extractors = [SummaryExtractor(llm, summaries=["self", "prev", "next"], disable_template_rewrite=not rewrite,
                                   show_progress=False),
                  QuestionsAnsweredExtractor(llm, questions=2, embedding_only=True, show_progress=False),
                  TitleExtractor(llm, nodes=2, show_progress=False)]
    out = nodes
    for e in extractors:
        out = e(out, embed_model=embed)
    added = _added_keys(extractors)
    for n in out:
        view = n.get_content(MetadataMode.EMBED)
        assert tok.count(view) <= limit, (tok.count(view), limit)
        for key in added:
            if key in n.metadata:  # whole answers, never cut
                assert n.metadata[key] == n.metadata[key].strip() and n.metadata[key] in possible_answers(lengths)
        left_out = [k for k in n.excluded_embed_metadata_keys if k in added]
        for key in left_out:  # left out only when it would not fit
            trial = n.copy()
            trial.excluded_embed_metadata_keys = [k for k in n.excluded_embed_metadata_keys if k != key]
            assert tok.count(trial.get_content(MetadataMode.EMBED)) > limit
        for key in added:
            if key in n.metadata and key not in left_out:
                assert f"{key}: {n.metadata[key]}" in view
        assert n.text_template in (DEFAULT_TEXT_NODE_TMPL, extractors[0].node_text_template)
        if n.metadata.get("questions_this_excerpt_can_answer"):
            assert "questions_this_excerpt_can_answer" in n.excluded_llm_metadata_keys


def possible_answers(lengths):
    """Every answer the server can give for ``lengths``."""
    return {" ".join(WORDS[i % len(WORDS)] for i in range(n)) for n in lengths}


def test_full_chunks_keep_their_text_and_lose_the_title_with_a_warning(embed, llm, tmp_path, caplog):
    """Chunks packed to the embed model's limit have no room for a title: it is left out of their
    embedded text (the model truncates nothing), kept in metadata and shown to the LLM."""
    ANSWER_LENGTHS["lengths"] = [12]
    text = " ".join(SENTENCES * 40)
    storage = StorageContext.from_defaults(persist_dir=tmp_path / "s", create_if_missing=True)
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=embed.max_text_tokens, chunk_overlap=0,
                                          tokenizer=embed.get_tokenizer()),
                         TitleExtractor(llm, nodes=1), embed],
        docstore=storage.docstore, vector_store=storage.vector_store)
    before = embed.truncated_count
    with caplog.at_level(logging.WARNING, logger="ragloom.extractors.interface"):
        nodes = pipeline.run(documents=[Document(id_="long", text=text)])
    assert embed.truncated_count == before
    assert len(nodes) >= 3
    title = nodes[0].metadata["document_title"]
    assert title == answer("x") and all(n.metadata["document_title"] == title for n in nodes)
    full = [n for n in nodes if "document_title" in n.excluded_embed_metadata_keys]
    assert full and all(title not in n.get_content(MetadataMode.EMBED) for n in full)
    assert all(title in n.get_content(MetadataMode.LLM) for n in nodes)
    assert "document_title" in caplog.text and f"of {len(nodes)})" in caplog.text
    for n in nodes:
        assert embed.get_tokenizer().count(n.get_content(MetadataMode.EMBED)) <= embed.max_text_tokens
    # with room left by the splitter, the title is embedded
    roomy = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=200, chunk_overlap=0,
                                                                tokenizer=embed.get_tokenizer()),
                                               TitleExtractor(llm, nodes=1), embed])
    for n in roomy.run(documents=[Document(id_="long", text=text)]):
        assert f"document_title: {title}" in n.get_content(MetadataMode.EMBED)
