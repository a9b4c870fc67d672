"""Code-aware node parsing: :class:`CodeSplitter` (tree-sitter) and the code/text router."""

from ragloom.node_parser.code.code import CodeSplitter
from ragloom.node_parser.code.languages import (
    CODE_EXTENSIONS,
    LanguageUnavailable,
    get_language,
    language_for_extension,
)

__all__ = ["CodeSplitter", "CODE_EXTENSIONS", "LanguageUnavailable", "get_language", "language_for_extension"]
