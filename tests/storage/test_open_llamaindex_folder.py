"""``StorageContext.from_defaults(persist_dir=<a LlamaIndex storage folder>)``: the error says what the
folder is and how to import it (before: "no ragloom index ... pass create_if_missing=True")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragloom import StorageContext, load_index_from_storage
from ragloom.embeddings import resolve_embed_model

STORAGE = Path(__file__).resolve().parents[1] / "data" / "llamaindex_storage"


def test_a_llamaindex_folder_is_named_and_the_import_suggested():
    before = sorted(p.name for p in STORAGE.iterdir())
    with pytest.raises(FileNotFoundError, match="is a LlamaIndex storage folder") as err:
        StorageContext.from_defaults(persist_dir=STORAGE)
    message = str(err.value)
    assert "StorageContext.from_llamaindex(persist_dir, embed_model=...)" in message
    assert f"ragloom import-llamaindex {STORAGE}" in message
    assert "docstore.json" in message and "create_if_missing" not in message
    assert sorted(p.name for p in STORAGE.iterdir()) == before  # nothing written there
    with pytest.raises(FileNotFoundError, match="LlamaIndex storage folder"):
        load_index_from_storage(StorageContext.from_defaults(persist_dir=str(STORAGE)))
    # following the advice works
    index = load_index_from_storage(StorageContext.from_llamaindex(STORAGE, embed_model=resolve_embed_model("fp32")))
    assert index.vector_store.count() == 14


@pytest.mark.parametrize("name", ["docstore.json", "index_store.json", "default__vector_store.json"])
def test_any_one_llamaindex_file_is_recognised(tmp_path, name):
    shutil.copy(STORAGE / name, tmp_path / name)
    with pytest.raises(FileNotFoundError, match=rf"LlamaIndex storage folder \({name}\)"):
        StorageContext.from_defaults(persist_dir=tmp_path)


def test_other_folders_keep_their_errors_and_create_if_missing_still_creates(tmp_path):
    with pytest.raises(FileNotFoundError, match="no ragloom index .*create_if_missing=True"):
        StorageContext.from_defaults(persist_dir=tmp_path / "empty")
    # an explicit create_if_missing=True is obeyed (import-llamaindex may write its index there)
    shutil.copy(STORAGE / "docstore.json", tmp_path / "docstore.json")
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    assert (tmp_path / "ragloom.sqlite").is_file() and sc.vector_store.count() == 0
    sc.close()
    StorageContext.from_defaults(persist_dir=tmp_path).close()  # now a ragloom index: opens
