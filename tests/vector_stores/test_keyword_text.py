"""What the keyword (BM25) index sees of a node, and the rebuild of indexes made by an older version."""

import numpy as np

from ragloom.fts import KEYWORD_TEXT_VERSION, keyword_text
from ragloom.schema import NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.storage.sqlite import SQLiteDatabase
from ragloom.vector_stores import SQLiteVectorStore
from ragloom.vector_stores.types import VectorStoreQuery

PAGES = {
    # every page carries a file_path, as SimpleDirectoryReader's nodes do
    "path-params.md": "Declare a path parameter with the same syntax used by Python format strings.",
    "query-params.md": "Declare other function parameters as query parameters.",
    "body.md": "Declare a request body with a Pydantic model to send data from a client.",
    "cors.md": "Add CORS middleware so a frontend on another origin can call the API.",
}


def _nodes():
    rng = np.random.default_rng(7)
    out = []
    for name, text in PAGES.items():
        v = rng.normal(size=8).astype(np.float32)
        out.append(
            TextNode(
                id_=name,
                text=text,
                embedding=(v / np.linalg.norm(v)).tolist(),
                metadata={"file_path": f"/srv/docs/tutorial/{name}", "file_name": name, "file_size": len(text)},
                excluded_embed_metadata_keys=["file_name", "file_size"],
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=name)},
            )
        )
    return out


def test_keyword_text_has_visible_metadata_values_not_keys():
    node = _nodes()[1]
    tokens = keyword_text(node).split()
    # value words of the visible key are indexed (the file name's words)...
    assert "queri" in tokens and "tutori" in tokens
    # ...hidden keys' values are not, and no key name is
    assert str(len(PAGES["query-params.md"])) not in tokens
    assert "file" not in tokens and "size" not in tokens
    # neither text nor values say "path": the key "file_path" must not add it
    assert "path" not in tokens


def test_metadata_key_words_do_not_drown_query_terms():
    store = SQLiteVectorStore()
    store.add(_nodes())
    res = store.query(
        VectorStoreQuery(query_str="How do I declare a path parameter?", similarity_top_k=4, mode="text_search")
    )
    assert res.ids[0] == "path-params.md"


def test_index_of_an_older_keyword_version_is_rebuilt_on_open(tmp_path):
    path = tmp_path / "ragloom.sqlite"
    store = SQLiteVectorStore(SQLiteDatabase(path))
    store.add(_nodes())
    query = VectorStoreQuery(query_str="pydantic request body", similarity_top_k=1, mode="text_search")
    assert store.query(query).ids == ["body.md"]
    conn = store.database.connection
    # simulate a database written by version 1: empty keyword rows and an old version number
    with store.database.transaction():
        conn.execute('DELETE FROM "vs_default_fts"')
        conn.execute("UPDATE fts_versions SET version = 1 WHERE name = 'vs_default_fts'")
    assert store.query(query).ids == []
    store.database.close()

    reopened = SQLiteVectorStore(SQLiteDatabase(path, create=False))
    assert reopened.query(query).ids == ["body.md"]
    version = reopened.database.connection.execute(
        "SELECT version FROM fts_versions WHERE name = 'vs_default_fts'"
    ).fetchall()
    assert version[0][0] == KEYWORD_TEXT_VERSION
    # opening a current index does not rebuild it: its rows stay as they are
    with reopened.database.transaction():
        reopened.database.connection.execute('DELETE FROM "vs_default_fts"')
    reopened.database.close()
    again = SQLiteVectorStore(SQLiteDatabase(path, create=False))
    assert again.query(query).ids == []
