"""Fixtures of the retriever tests."""

import pytest


@pytest.fixture(scope="session")
def embed_model():
    from ragloom.embeddings import resolve_embed_model

    return resolve_embed_model("default")
