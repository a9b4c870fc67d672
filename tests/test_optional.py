"""``ragloom._optional``: optional dependencies fail with the pip extra that installs them."""

import importlib
import sys

import pytest

from ragloom._optional import MissingDependencyError, available, importing, require
from ragloom.errors import RagloomError


def test_require_and_available():
    assert require("json", "code", "x") is sys.modules["json"] and available("json")
    assert not available("ragloom_no_such_module_xyz") and not available("ragloom_no_such_pkg.sub")
    with pytest.raises(MissingDependencyError) as ei:
        require("ragloom_no_such_module_xyz", "static", "Model2VecEmbedding")
    err = ei.value
    assert isinstance(err, ImportError) and isinstance(err, RagloomError)
    assert (err.module, err.extra, err.feature, err.name) == (
        "ragloom_no_such_module_xyz", "static", "Model2VecEmbedding", "ragloom_no_such_module_xyz"
    )
    assert str(err).endswith('pip install "ragloom[static]"')


def test_module_level_imports_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)
    monkeypatch.delitem(sys.modules, "ragloom.transport", raising=False)
    with pytest.raises(MissingDependencyError, match=r"'httpx'.*ragloom\[remote\]"):
        importlib.import_module("ragloom.transport")
    with pytest.raises(MissingDependencyError, match="'httpx'"):
        with importing("remote", "a feature"):
            import httpx  # noqa: F401
