"""A real index (bundled embedding model, SQLite store) and the prompt-recording OpenAI-compatible server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # type: ignore[import-not-found]  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chat_support import DOCS  # type: ignore[import-not-found, unused-ignore]  # noqa: E402


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("chat_docs")
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def index(docs_dir, tmp_path_factory):
    from ragloom import SimpleDirectoryReader, StorageContext, VectorStoreIndex, load_index_from_storage

    persist = tmp_path_factory.mktemp("chat_index")
    docs = SimpleDirectoryReader(input_dir=str(docs_dir)).load_data()
    storage = StorageContext.from_defaults(persist_dir=persist, create_if_missing=True)
    built = VectorStoreIndex.from_documents(docs, storage_context=storage)
    built.storage_context.persist(persist)
    return load_index_from_storage(StorageContext.from_defaults(persist_dir=persist))


@pytest.fixture
def server_factory():
    servers = []

    def make(answer, **kwargs):
        srv = OpenAICompatibleServer(answer=answer, **kwargs)
        srv.start()
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.stop()
