"""Markdown helpers for readers: the document title, found with a CommonMark parser."""

from __future__ import annotations

import functools
import re
from typing import Any, Optional

__all__ = ["markdown_title", "inline_plain_text", "MARKDOWN_EXTS", "TITLE_KEY"]

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


def inline_plain_text(inline: Any) -> str:
    """Plain text of a markdown-it ``inline`` token: text and code spans kept, inline HTML tags
    dropped (their inner text is kept), line breaks as spaces, a trailing attribute list such as
    ``{ #path-parameters }`` removed."""
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return _ATTR_LIST_RE.sub("", "".join(parts)).strip()


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
        plain = inline_plain_text(tokens[i + 1])
        if not plain:
            continue
        if tok.tag == "h1":
            return plain
        if first is None:
            first = plain
    return first
