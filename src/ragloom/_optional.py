"""Optional dependencies: the one place that imports them and names the extra that installs them.

A module that belongs to a pip extra (``ragloom[code]``, ``ragloom[remote]`` …) is imported where
it is first needed, through :func:`require`, so ``import ragloom`` works without any extra and a
missing one fails with the install line::

    tree_sitter = require("tree_sitter", "code", "CodeSplitter")
    # MissingDependencyError: CodeSplitter needs the 'tree_sitter' module, which is not
    # installed: pip install "ragloom[code]"

Module-level imports of a module that needs an extra throughout (``transport.py``) use
:func:`importing` around the import statements instead, so the imported names keep their types.
:func:`available` asks whether a module is installed without importing it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from types import ModuleType
from typing import Iterator

from ragloom.errors import RagloomError

__all__ = ["MissingDependencyError", "require", "available", "importing", "install_line"]


def install_line(extra: str) -> str:
    """The command that installs ``extra``: ``pip install "ragloom[<extra>]"`` (quoted for every shell)."""
    return f'pip install "ragloom[{extra}]"'


class MissingDependencyError(RagloomError, ImportError):
    """An optional dependency is not installed.

    An ``ImportError`` (so ``except ImportError`` keeps working) and a
    :class:`~ragloom.errors.RagloomError`.  ``module`` is the module that could not be imported,
    ``extra`` the pip extra that installs it and ``feature`` what needs it; the message ends with
    the install line, e.g. ``pip install "ragloom[code]"``.
    """

    def __init__(self, module: str, extra: str, feature: str, detail: str = "", install: str = "") -> None:
        why = f" ({detail})" if detail else ""
        super().__init__(
            f"{feature} needs the {module!r} module, which is not installed{why}: {install or install_line(extra)}",
            name=module,
        )
        self.module = module
        self.extra = extra
        self.feature = feature


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` and return it.

    Args:
        module: dotted module name (``"tree_sitter"``).
        extra: the pip extra that installs it (``"code"``).
        feature: what needs it, for the message (``"CodeSplitter"``).

    Raises:
        MissingDependencyError: (an ``ImportError``) ``module`` cannot be imported — not installed,
            or an import it makes fails; the original ``ImportError`` is its ``__cause__``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        detail = "" if exc.name == module else str(exc)
        raise MissingDependencyError(module, extra, feature, detail) from exc


def available(module: str) -> bool:
    """Whether ``module`` is installed, found without importing it (cheap: no import side effects).

    ``True`` does not promise that :func:`require` succeeds (a broken installation fails only on
    import); ``False`` means :func:`require` would raise.  Never raises.
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package; a module whose __spec__ is unset
        return False


@contextlib.contextmanager
def importing(extra: str, feature: str) -> Iterator[None]:
    """Turn an ``ImportError`` raised by the import statements in the block into
    :class:`MissingDependencyError` naming the module and ``extra``.

    Raises:
        MissingDependencyError: an import in the block failed.
    """
    try:
        yield
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        module = exc.name or "?"
        raise MissingDependencyError(module, extra, feature, "" if exc.name else str(exc)) from exc
