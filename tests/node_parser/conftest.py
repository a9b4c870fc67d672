import pytest

from ragloom.tokenizers import get_default_tokenizer, get_tokenizer


@pytest.fixture(scope="session")
def hf_tok():
    return get_default_tokenizer()


@pytest.fixture(scope="session")
def cl100k():
    return get_tokenizer("cl100k_base")
