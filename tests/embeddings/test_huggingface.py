import numpy as np
import pytest
import torch

from ragloom.embeddings import HuggingFaceEmbedding, resolve_embed_model
from ragloom.errors import ModelNotAvailableError
from ragloom.schema import MetadataMode, TextNode


@pytest.fixture(scope="module")
def model():
    return HuggingFaceEmbedding(embed_batch_size=4)


def test_bundled_model_loads_offline_and_embeds(model):
    vec = model.get_text_embedding("How do I reset my password?")
    assert len(vec) == 384 == model.dimension
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-4  # normalised by default


def test_batch_keeps_input_order_across_length_sorting(model):
    texts = ["short", "a much longer sentence about brewing green tea at eighty degrees", "mid length text", "x"]
    batch = np.asarray(model.get_text_embedding_batch(texts))
    singles = np.asarray([model.get_text_embedding(t) for t in texts])
    assert batch.shape == (4, 384)
    assert np.allclose(batch, singles, atol=1e-4)


def test_paraphrase_scores_higher_than_unrelated(model):
    q = model.get_query_embedding("How do I reset my password?")
    para = model.get_text_embedding("What are the steps to change my account password?")
    other = model.get_text_embedding("The giant panda eats bamboo for ten hours a day.")
    assert model.similarity(q, para) > model.similarity(q, other) + 0.2


def test_models_are_cached_per_process(model):
    again = HuggingFaceEmbedding(embed_batch_size=8)
    assert again.model is model.model


def test_token_limits_and_tokenizer(model):
    assert model.max_length == 256
    assert model.max_text_tokens == 254
    tok = model.get_tokenizer()
    assert tok.count("hello world") == 2


def test_truncation_is_counted(model):
    before = model.truncated_count
    model.get_text_embedding_batch(["word " * 600])
    assert model.truncated_count == before + 1


def test_instructions_are_applied_once():
    plain = HuggingFaceEmbedding()
    prefixed = HuggingFaceEmbedding(query_instruction="query: ")
    v1 = prefixed.get_query_embedding("tea")
    v2 = plain.get_text_embedding("query: tea")
    assert np.allclose(v1, v2, atol=1e-5)


def test_unknown_model_fails_fast_with_clear_message():
    with pytest.raises(ModelNotAvailableError, match="not available locally"):
        HuggingFaceEmbedding(model_name="BAAI/bge-small-zh-v1.5-does-not-exist")


def test_bad_arguments():
    with pytest.raises(ValueError, match="embed_batch_size"):
        HuggingFaceEmbedding(embed_batch_size=0)
    with pytest.raises(ValueError, match="max_length"):
        HuggingFaceEmbedding(max_length=2)
    with pytest.raises(ValueError, match="embed_model"):
        resolve_embed_model(42)


def test_as_transformation_embeds_embed_view_of_nodes(model):
    node = TextNode(
        text="green tea", metadata={"file_path": "tea.md", "secret": "x"}, excluded_embed_metadata_keys=["secret"]
    )
    done = TextNode(text="already", embedding=[0.0] * 384)
    out = model([node, done])
    assert out[1].embedding == [0.0] * 384
    expected = model.get_text_embedding(node.get_content(MetadataMode.EMBED))
    assert np.allclose(out[0].embedding, expected, atol=1e-5)


def test_max_length_of_one_instance_does_not_leak_into_another(model):
    short = HuggingFaceEmbedding(max_length=16, embed_batch_size=4)
    assert short.model is model.model  # one loaded model ...
    long_text = "tea " * 40
    v_short = short.get_text_embedding(long_text)
    v_full = model.get_text_embedding(long_text)
    assert model.max_length == 256 and short.max_length == 16  # ... but each keeps its own window
    assert not np.allclose(v_short, v_full, atol=1e-3)
    assert np.allclose(model.get_text_embedding(long_text), v_full, atol=1e-6)


def test_cache_identity_needs_no_model_load():
    emb = HuggingFaceEmbedding(device="cpu", model_name="all-MiniLM-L6-v2")
    ident = emb.cache_identity()
    assert emb._model is None  # dimension read from the model folder
    assert ident["dimension"] == 384 and ident["max_length"] == 256
    assert "query_instruction" not in ident and ident["text_instruction"] is None


def test_fp16_on_cuda_only():
    emb = HuggingFaceEmbedding(device="cpu")
    assert next(emb.model.parameters()).dtype == torch.float32
