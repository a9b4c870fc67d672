"""Markdown helpers for readers: the document title, found with a CommonMark parser."""

from __future__ import annotations

import functools
import re
from typing import Any, Optional

__all__ = ["markdown_title", "MARKDOWN_EXTS", "TITLE_KEY"]

MARKDOWN_EXTS = frozenset({".md", ".markdown", ".mdx", ".mkd"})
#: Metadata key of a document's title (LlamaIndex's TitleExtractor uses the same name).
TITLE_KEY = "document_title"
#: How much of the file is parsed to find the title, in characters.
_TITLE_SCAN_CHARS = 8192
_ATTR_LIST_RE = re.compile(r"\s*\{[^{}]*\}\s*$")  # "{ #anchor .class }" (Python-Markdown attr_list)


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def markdown_title(text: str) -> Optional[str]:
    """The first level-1 heading of a Markdown text (ATX ``#`` or setext ``===``), else the
    first heading of any level, as plain text; ``None`` if there is none in the first
    8,192 characters.

    Headings inside fenced or indented code are not headings (CommonMark, via
    markdown-it-py); inline markup is reduced to its text and a trailing attribute list
    such as ``{ #path-parameters }`` is dropped.
    """
    head = text[:_TITLE_SCAN_CHARS]
    if "#" not in head and "==" not in head and "--" not in head:
        return None
    tokens = _parser().parse(head)
    first: Optional[str] = None
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or i + 1 >= len(tokens):
            continue
        inline = tokens[i + 1]
        plain = "".join(
            child.content for child in (inline.children or []) if child.type in ("text", "code_inline")
        )
        plain = _ATTR_LIST_RE.sub("", plain).strip()
        if not plain:
            continue
        if tok.tag == "h1":
            return plain
        if first is None:
            first = plain
    return first
