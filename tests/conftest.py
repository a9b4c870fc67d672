import os

import pytest

# No test may reach the network: the bundled model loads from site-packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED_DATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


@pytest.fixture(autouse=True)
def _reset_settings():
    from ragloom.settings import Settings

    Settings.reset()
    yield
    Settings.reset()


@pytest.fixture(scope="session")
def shared_data():
    if not os.path.isdir(SHARED_DATA):
        pytest.skip("../shared/data is not present")
    return SHARED_DATA
