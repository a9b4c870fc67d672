"""IngestionPipeline with real components: SentenceSplitter, the bundled HuggingFaceEmbedding, SQLite stores."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ragloom.ingestion import DocstoreStrategy, IngestionCache, IngestionPipeline
from ragloom.node_parser import SentenceSplitter
from ragloom.schema import Document, TextNode
from ragloom.storage import StorageContext

TEXTS = {
    "a": "Alpha cats sleep all day. They purr softly on the sofa. Cats like warm places.",
    "b": "Beta dogs run in the park. They fetch sticks and balls. Dogs love long walks.",
    "c": "Gamma birds sing at dawn. They build nests in tall trees. Birds migrate south.",
}


class Counting:
    """Counts the texts the embed model really computes."""

    def __init__(self, model, monkeypatch):
        self.texts = []
        inner = model._get_text_embeddings

        def wrapped(texts):
            self.texts.extend(texts)
            return inner(texts)

        monkeypatch.setattr(model, "_get_text_embeddings", wrapped)


class CountingSplitter(SentenceSplitter):
    calls: ClassVar[list] = []

    def get_nodes_from_documents(self, documents, show_progress=False, **kwargs):
        CountingSplitter.calls.append([d.id_ for d in documents])
        return super().get_nodes_from_documents(documents, show_progress=show_progress, **kwargs)


def docs(texts=TEXTS):
    return [Document(id_=k, text=v, metadata={"name": k}) for k, v in texts.items()]


def splitter(embed, size=16, cls=SentenceSplitter):
    return cls(chunk_size=size, chunk_overlap=0, tokenizer=embed.get_tokenizer())


def test_second_run_embeds_nothing(embed, monkeypatch):
    count = Counting(embed, monkeypatch)
    cache = IngestionCache()
    p = IngestionPipeline(transformations=[splitter(embed), embed], cache=cache)
    first = p.run(documents=docs())
    assert len(count.texts) == len(first) > 3
    assert all(n.embedding is not None for n in first)
    second = IngestionPipeline(transformations=[splitter(embed), embed], cache=cache).run(documents=docs())
    assert len(count.texts) == len(first)  # nothing embedded again
    assert [n.id_ for n in second] == [n.id_ for n in first]
    assert [n.embedding for n in second] == [n.embedding for n in first]


def test_editing_one_document_recomputes_only_its_nodes(embed, monkeypatch):
    count = Counting(embed, monkeypatch)
    CountingSplitter.calls = []
    p = IngestionPipeline(transformations=[splitter(embed, cls=CountingSplitter), embed])
    first = p.run(documents=docs())
    n_first = len(count.texts)
    edited = dict(TEXTS, b="Beta dogs run in the big park. They fetch sticks and balls. Dogs love long walks.")
    second = p.run(documents=docs(edited))
    assert CountingSplitter.calls[-1] == ["b"]
    recomputed = count.texts[n_first:]
    b_nodes = [n for n in second if n.ref_doc_id == "b"]
    assert len(recomputed) <= len(b_nodes)
    assert any("big park" in t for t in recomputed)
    assert not any("cats" in t.lower() or "birds" in t.lower() for t in recomputed)
    old = {n.id_ for n in first if n.ref_doc_id != "b"}
    assert old == {n.id_ for n in second if n.ref_doc_id != "b"}


def test_changing_splitter_config_invalidates_only_that_step(embed, monkeypatch):
    count = Counting(embed, monkeypatch)
    cache = IngestionCache()
    CountingSplitter.calls = []
    IngestionPipeline(transformations=[splitter(embed, 16, CountingSplitter), embed], cache=cache).run(documents=docs())
    n_first = len(count.texts)
    # chunk_size large enough that every document is one chunk: splitting reruns for all three
    out = IngestionPipeline(transformations=[splitter(embed, 200, CountingSplitter), embed], cache=cache).run(
        documents=docs()
    )
    assert len(CountingSplitter.calls) == 2 and sorted(CountingSplitter.calls[-1]) == ["a", "b", "c"]
    assert len(out) == 3 and len(count.texts) == n_first + 3
    # back to the first config: every step is a hit
    again = IngestionPipeline(transformations=[splitter(embed, 16, CountingSplitter), embed], cache=cache).run(
        documents=docs()
    )
    assert len(CountingSplitter.calls) == 2 and len(count.texts) == n_first + 3 and len(again) == n_first
    # a new embed step config (different model identity) would re-embed, but nodes only pass through
    # a changed step: a cache keyed per step means the splitter's entries stay valid
    nodes_only = IngestionPipeline(transformations=[splitter(embed, 16, CountingSplitter)], cache=cache).run(
        documents=docs()
    )
    assert len(CountingSplitter.calls) == 2 and all(n.embedding is None for n in nodes_only)


def test_upserts_replaces_changed_document_vectors_exactly(embed):
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(
        transformations=[splitter(embed), embed], docstore=sc.docstore, vector_store=sc.vector_store
    )
    first = p.run(documents=docs())
    per_doc = {k: sum(1 for n in first if n.ref_doc_id == k) for k in TEXTS}
    assert sc.vector_store.count() == len(first)
    assert p.run(documents=docs()) == []  # unchanged: skipped
    assert sc.vector_store.count() == len(first)
    edited = dict(TEXTS, a="Alpha cats sleep. Short now.")
    out = p.run(documents=docs(edited))
    assert {n.ref_doc_id for n in out} == {"a"}
    assert sc.vector_store.count() == per_doc["b"] + per_doc["c"] + len(out)
    assert sorted(sc.docstore.get_ref_doc_info("a").node_ids) == sorted(n.id_ for n in out)
    assert sc.docstore.get_document_hash("a") == p.engine().fingerprint([docs(edited)[0]])
    stored = sc.vector_store.get_nodes(node_ids=[n.id_ for n in out])
    assert len(stored) == len(out)


def test_hiding_a_metadata_key_from_the_embed_view_re_embeds_that_document(embed):
    """``doc.hash`` ignores which keys the embed view hides, yet they change the embedded text:
    the fingerprint records them (a reader that stops embedding ``file_path`` re-embeds once)."""
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(transformations=[splitter(embed, 64), embed], docstore=sc.docstore,
                          vector_store=sc.vector_store)
    p.run(documents=docs())
    hidden = docs()
    hidden[0].excluded_embed_metadata_keys = ["name"]
    assert hidden[0].hash == docs()[0].hash
    out = p.run(documents=hidden)
    assert {n.ref_doc_id for n in out} == {"a"}
    assert all("name: a" not in n.get_content("embed") for n in out)
    assert p.run(documents=hidden) == []


def test_compact_embeddings_only_for_nodes_nobody_keeps(embed):
    """float32 vectors (not lists) are for ``ragloom index``'s own documents; nodes handed back to a
    caller keep ``list[float]`` embeddings."""
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(transformations=[splitter(embed, 64), embed], docstore=sc.docstore,
                          vector_store=sc.vector_store, disable_cache=True)
    engine = p.engine(store_doc_text=False)
    with pytest.raises(ValueError, match="compact_embeddings=True needs nodes nobody keeps"):
        engine.run([docs()], collect=[], compact_embeddings=True)
    stats = engine.run([docs()], compact_embeddings=True)
    assert stats.nodes_written == sc.vector_store.count() > 0
    out = p.run(documents=docs(dict(TEXTS, a="Alpha cats changed their minds.")))
    assert out and all(type(n.embedding) is list for n in out)


def test_duplicates_only_within_batch(embed):
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(
        transformations=[splitter(embed), embed],
        docstore=sc.docstore,
        vector_store=sc.vector_store,
        docstore_strategy=DocstoreStrategy.DUPLICATES_ONLY,
    )
    batch = [
        Document(id_="x1", text=TEXTS["a"]),
        Document(id_="x2", text=TEXTS["a"]),
        Document(id_="y", text=TEXTS["c"]),
    ]
    out = p.run(documents=batch)
    assert {n.ref_doc_id for n in out} == {"x1", "y"}
    count = sc.vector_store.count()
    assert p.run(documents=[Document(id_="z", text=TEXTS["c"])]) == []
    assert sc.vector_store.count() == count


def test_upserts_and_delete_removes_absent_documents(embed):
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(
        transformations=[splitter(embed), embed],
        docstore=sc.docstore,
        vector_store=sc.vector_store,
        docstore_strategy="upserts_and_delete",
    )
    first = p.run(documents=docs())
    kept = [d for d in docs() if d.id_ != "b"]
    assert p.run(documents=kept) == []
    assert sc.vector_store.count() == sum(1 for n in first if n.ref_doc_id != "b")
    assert sc.docstore.get_ref_doc_info("b") is None
    assert sc.docstore.get_document_hash("b") is None
    assert sc.docstore.get_ref_doc_info("a") is not None


def test_without_docstore_running_twice_adds_no_copy(embed):
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(transformations=[splitter(embed), embed], vector_store=sc.vector_store)
    first = p.run(documents=docs() + docs())
    assert len({n.id_ for n in first}) == len(first)
    p.run(documents=docs())
    assert sc.vector_store.count() == len(first)


def test_cache_persists_across_objects(tmp_path, embed, monkeypatch):
    path = tmp_path / "cache.sqlite"
    count = Counting(embed, monkeypatch)
    c1 = IngestionCache(path)
    first = IngestionPipeline(transformations=[splitter(embed), embed], cache=c1).run(documents=docs())
    c1.close()
    n = len(count.texts)
    c2 = IngestionCache(path)
    second = IngestionPipeline(transformations=[splitter(embed), embed], cache=c2).run(documents=docs())
    assert len(count.texts) == n
    assert [x.id_ for x in second] == [x.id_ for x in first]


def test_cache_put_get_clear_persist(tmp_path):
    cache = IngestionCache(collection="c")
    node = TextNode(id_="n1", text="hello", metadata={"k": 1}, embedding=[0.5, 0.25])
    cache.put("key", [node])
    got = cache.get("key")
    assert got is not None and got[0].id_ == "n1" and got[0].embedding == [0.5, 0.25] and isinstance(got[0], TextNode)
    assert cache.get("other") is None
    cache.persist(tmp_path / "p.sqlite")
    loaded = IngestionCache.from_persist_path(tmp_path / "p.sqlite", collection="c")
    assert loaded.get("key")[0].text == "hello"
    cache.clear()
    assert cache.get("key") is None and len(cache) == 0
    with pytest.raises(FileNotFoundError):
        IngestionCache.from_persist_path(tmp_path / "missing.sqlite")


def test_pipeline_persist_and_load(tmp_path, embed, monkeypatch):
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(transformations=[splitter(embed), embed], docstore=sc.docstore)
    p.run(documents=docs())
    p.persist(tmp_path / "pipe")
    count = Counting(embed, monkeypatch)
    q = IngestionPipeline(transformations=[splitter(embed), embed])
    q.load(tmp_path / "pipe")
    assert q.docstore.get_document_hash("a") == q.engine().fingerprint([docs()[0]])
    assert q.run(documents=docs()) == []  # docstore says unchanged
    q.docstore = None
    q.run(documents=docs())
    assert count.texts == []  # cache hit for every node


def test_hidden_metadata_is_not_a_change(embed, monkeypatch):
    count = Counting(embed, monkeypatch)
    p = IngestionPipeline(transformations=[splitter(embed), embed])

    def doc(mtime):
        return Document(
            id_="f",
            text=TEXTS["a"],
            metadata={"name": "f", "mtime": mtime},
            excluded_embed_metadata_keys=["mtime"],
            excluded_llm_metadata_keys=["mtime"],
        )

    p.run(documents=[doc("1")])
    n = len(count.texts)
    out = p.run(documents=[doc("2")])
    assert len(count.texts) == n
    assert all(x.metadata["mtime"] == "2" for x in out)


def test_num_workers_two_gives_same_ids(embed, caplog):
    many = {f"d{i}": f"Document {i} talks about topic {i}. " * 6 for i in range(6)}
    one = IngestionPipeline(transformations=[splitter(embed)], disable_cache=True).run(documents=docs(many))
    cache = IngestionCache()
    two = IngestionPipeline(transformations=[splitter(embed)], cache=cache).run(documents=docs(many), num_workers=2)
    assert [n.id_ for n in two] == [n.id_ for n in one]
    assert len(cache) == 6
    again = IngestionPipeline(transformations=[splitter(embed)], cache=cache).run(documents=docs(many), num_workers=2)
    assert [n.id_ for n in again] == [n.id_ for n in one]


def test_unpicklable_transformation_falls_back(embed, caplog):
    s = splitter(embed)
    s.id_func = lambda i, node: f"{node.id_}-{i}"  # lambdas do not pickle
    with caplog.at_level("WARNING"):
        out = IngestionPipeline(transformations=[s]).run(documents=docs(), num_workers=2)
    assert "cannot be pickled" in caplog.text
    assert out and all("-" in n.id_ for n in out)


async def _arun(p, d):
    return await p.arun(documents=d)


def test_arun(embed):
    import asyncio

    out = asyncio.run(_arun(IngestionPipeline(transformations=[splitter(embed)]), docs()))
    assert {n.ref_doc_id for n in out} == set(TEXTS)


class Tagger:
    """A 1:1 transformation before the splitter (like a metadata extractor)."""

    calls = 0

    def __call__(self, nodes, **kwargs):
        Tagger.calls += 1
        for n in nodes:
            n.metadata["tag"] = "t"
        return list(nodes)

    def to_config(self):
        return {"class_name": "Tagger"}


def test_changed_splitter_keeps_earlier_step_cached(embed):
    cache = IngestionCache()
    Tagger.calls = 0
    IngestionPipeline(transformations=[Tagger(), splitter(embed, 16)], cache=cache).run(documents=docs())
    assert Tagger.calls == 1
    out = IngestionPipeline(transformations=[Tagger(), splitter(embed, 200)], cache=cache).run(documents=docs())
    assert Tagger.calls == 1 and len(out) == 3 and all(n.metadata["tag"] == "t" for n in out)


def test_num_workers_uses_processes(embed, caplog):
    many = {f"d{i}": f"Document {i} is here. " * 4 for i in range(4)}
    with caplog.at_level("DEBUG", logger="ragloom.ingestion.transform"):
        IngestionPipeline(transformations=[splitter(embed)]).run(documents=docs(many), num_workers=2)
    assert "on 2 worker processes" in caplog.text


def test_default_transformations():
    from ragloom.settings import Settings

    p = IngestionPipeline()
    assert p.transformations[0] is Settings.node_parser and p.transformations[1] is Settings.embed_model
    assert p.docstore_strategy is DocstoreStrategy.UPSERTS
