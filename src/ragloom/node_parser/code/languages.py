"""Tree-sitter grammars that work offline, and the file-extension → language map.

Grammars come from the small per-language wheels (``tree-sitter-python``,
``tree-sitter-java`` …, installed by the ``ragloom[code]`` extra); if one is missing,
``tree-sitter-language-pack`` (pinned to 0.13.0, which bundles its grammars — later
versions download them) is tried.  :func:`get_language` raises
:class:`~ragloom._optional.MissingDependencyError` when tree-sitter itself is not installed
and :class:`LanguageUnavailable` with the reason (unknown language, grammar not installed)
otherwise, so callers can log it and fall back to text splitting.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from ragloom._optional import available, install_line, require

__all__ = [
    "LanguageUnavailable",
    "CODE_EXTENSIONS",
    "LANGUAGE_ALIASES",
    "canonical_language",
    "language_for_extension",
    "get_language",
    "get_parser",
]


class LanguageUnavailable(RuntimeError):
    """No usable tree-sitter grammar for a language; ``str(exc)`` is the reason."""


# canonical name -> (wheel module, function in it, name in tree-sitter-language-pack)
_GRAMMARS: Dict[str, Tuple[str, str, str]] = {
    "python": ("tree_sitter_python", "language", "python"),
    "java": ("tree_sitter_java", "language", "java"),
    "javascript": ("tree_sitter_javascript", "language", "javascript"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "tsx"),
    "go": ("tree_sitter_go", "language", "go"),
    "rust": ("tree_sitter_rust", "language", "rust"),
    "c": ("tree_sitter_c", "language", "c"),
    "cpp": ("tree_sitter_cpp", "language", "cpp"),
    "c_sharp": ("tree_sitter_c_sharp", "language", "csharp"),
}

LANGUAGE_ALIASES: Dict[str, str] = {
    "py": "python", "python3": "python",
    "js": "javascript", "jsx": "javascript", "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "rs": "rust",
    "c++": "cpp", "cxx": "cpp", "cc": "cpp",
    "csharp": "c_sharp", "c#": "c_sharp", "cs": "c_sharp", "c-sharp": "c_sharp",
}

CODE_EXTENSIONS: Dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".java": "java",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".c++": "cpp",
    ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".h++": "cpp",
    ".cs": "c_sharp",
}

_lock = threading.Lock()
_languages: Dict[str, Any] = {}


def canonical_language(name: str) -> str:
    key = name.strip().lower()
    return LANGUAGE_ALIASES.get(key, key)


def language_for_extension(ext: str) -> Optional[str]:
    """Canonical language of a file extension (``".py"`` or ``"py"``), or ``None``."""
    if not ext:
        return None
    ext = ext.lower()
    if not ext.startswith("."):
        ext = "." + ext
    return CODE_EXTENSIONS.get(ext)


def _tree_sitter() -> Any:
    return require("tree_sitter", "code", "CodeSplitter")


def get_language(name: str) -> Any:
    """The ``tree_sitter.Language`` of ``name`` (aliases accepted).

    Raises:
        MissingDependencyError: (an ``ImportError``) tree-sitter is not installed (the ``code`` extra).
        LanguageUnavailable: ``name`` is an unknown language, or no grammar for it is installed.
    """
    lang = canonical_language(name)
    tree_sitter = _tree_sitter()
    with _lock:
        if lang in _languages:
            return _languages[lang]
    spec = _GRAMMARS.get(lang)
    errors = []
    result: Any = None
    if spec is not None:
        mod_name, fn, _ = spec
        try:
            mod = importlib.import_module(mod_name)
            result = tree_sitter.Language(getattr(mod, fn)())
        except Exception as exc:  # ImportError, ABI mismatch (ValueError) …
            errors.append(f"{mod_name.replace('_', '-')}: {type(exc).__name__}: {exc}")
    if result is None:
        pack_name = spec[2] if spec else lang
        if not available("tree_sitter_language_pack"):
            errors.append("tree-sitter-language-pack: not installed")
        else:
            try:
                pack: Callable[[str], Any] = importlib.import_module("tree_sitter_language_pack").get_language
                result = pack(pack_name)
            except Exception as exc:  # ImportError, an unknown name (LookupError), ABI mismatch …
                errors.append(f"tree-sitter-language-pack: {type(exc).__name__}: {exc}")
    if result is None:
        if spec is None:
            raise LanguageUnavailable(f"unknown language {name!r} ({'; '.join(errors)})")
        raise LanguageUnavailable(f"no grammar for {lang!r}: {'; '.join(errors)} ({install_line('code')})")
    with _lock:
        _languages[lang] = result
    return result


def get_parser(name: str) -> Any:
    """A new ``tree_sitter.Parser`` for ``name`` (parsers are not thread-safe: one per user).

    Raises:
        MissingDependencyError: (an ``ImportError``) tree-sitter is not installed (the ``code`` extra).
        LanguageUnavailable: as :func:`get_language`.
    """
    return _tree_sitter().Parser(get_language(name))
