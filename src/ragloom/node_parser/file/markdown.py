"""``MarkdownNodeParser``: one node per header section, found by a CommonMark parser.

The document is parsed with markdown-it-py (CommonMark + GFM tables), so a ``#`` line
inside a fenced (```` ``` ```` or ``~~~``) or indented code block is code, not a header.
Sections run from a top-level header to the next one; the text before the first header
is a section of its own.  The header path follows header *levels*: after ``# A`` and
``### B``, a second ``### C`` is B's sibling (``header_path_list == ["A", "C"]``).

Offsets contract: every node's text is a slice of the document text,
``doc.text[node.start_char_idx:node.end_char_idx] == node.text`` (whitespace-stripped at
the edges), so fenced code is byte-exact (tabs, NBSP …).  A section over ``chunk_size``
tokens (measured with its embedded metadata, in ``tokenizer`` — default
``Settings.tokenizer``) is cut by the span engine at block boundaries first (top-level
blocks, then list items), then paragraphs, sentences, lines, words.

Metadata per node:

- ``header_path``: LlamaIndex's string form: the titles *above* the section's own header,
  each followed by ``header_path_separator`` and the whole prefixed with it (``"/A/B/"`` for
  ``### C`` under ``# A`` > ``## B``; ``"/"`` for a top-level section and for the preamble);
  hidden from embed and LLM views (LlamaIndex embeds it; here the breadcrumb below is
  embedded instead, so no title is embedded twice);
- ``header_path_list``: ragloom's list form: the titles from the top down to *and including*
  the section's own header (``["A", "B", "C"]``; ``[]`` for the preamble), unambiguous even
  when a title contains the separator; hidden from embed and LLM views;
- ``header_path_display``: the titles *above the node's text*, joined with ``" > "``
  (visible, so embedded with the text).  A node that begins with its section's heading
  line already holds that title, so it gets the ancestors only (``"A"`` for the first
  node of section ``A > B``; the key is absent for a top-level section's first node);
  a later piece of a cut section, which lacks the heading, gets the full path.  Either
  way the embedded text names each title once.  Absent for the preamble, and left out
  where, with the document's embedded metadata, it would take half of ``chunk_size`` or
  more (a deep path in a small budget): it is context, not content.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, Dict, List, Optional, Tuple

from ragloom.node_parser.file.base import (
    DEFAULT_CHUNK_SIZE,
    CutLevel,
    FormatNodeParser,
    Piece,
    sentence_levels,
)
from ragloom.node_parser.interface import IdFuncCallable, _wrappers_for
from ragloom.readers.markdown import inline_plain_text
from ragloom.schema import BaseNode

logger = logging.getLogger(__name__)

__all__ = ["MarkdownNodeParser", "HEADER_PATH_KEY", "HEADER_PATH_LIST_KEY", "HEADER_PATH_DISPLAY_KEY",
           "markdown_sections"]

HEADER_PATH_KEY = "header_path"
HEADER_PATH_LIST_KEY = "header_path_list"
HEADER_PATH_DISPLAY_KEY = "header_path_display"
DEFAULT_HEADER_PATH_SEPARATOR = "/"
DISPLAY_SEP = " > "
_NEWLINE = re.compile(r"\r\n?|\n")  # markdown-it's line breaks (it normalises \r\n and \r)
_BLOCK_OPEN = re.compile(r"^(?:.*_open|fence|code_block|html_block|hr)$")
_DISPLAY_MAX_SHARE = 0.5  # the breadcrumb is embedded only while the metadata take less of chunk_size


@functools.lru_cache(maxsize=1)
def _md() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


@functools.lru_cache(maxsize=1)
def _block_md() -> Any:
    """Block structure only: inline parsing (most of the cost) is done for titles alone."""
    md = _md().__class__("commonmark").enable("table")
    md.disable("inline", ignoreInvalid=True)
    return md


def _line_starts(text: str) -> List[int]:
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    return starts


def _title(inline: Any) -> str:
    return inline_plain_text(inline)


def markdown_sections(text: str) -> Tuple[List[Tuple[int, int, List[str]]], List[int], List[int]]:
    """``(sections, block_cuts, item_cuts)`` of a Markdown text.

    ``sections``: ``(start, end, header_path)`` in order, covering the text; ``block_cuts``:
    character offsets where top-level blocks start; ``item_cuts``: where list items start.
    """
    tokens = _block_md().parse(text)
    ls = _line_starts(text)
    n = len(text)

    def off(line: int) -> int:
        return ls[line] if line < len(ls) else n

    heads: List[Tuple[int, int, str]] = []  # (offset, level, title)
    blocks: List[int] = []
    items: List[int] = []
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        if tok.level == 0 and _BLOCK_OPEN.match(tok.type):
            blocks.append(off(tok.map[0]))
        if tok.type == "list_item_open":
            items.append(off(tok.map[0]))
        if tok.type == "heading_open" and tok.level == 0:
            title = ""
            if i + 1 < len(tokens) and tokens[i + 1].type == "inline":
                parsed = _md().parseInline(tokens[i + 1].content)
                title = _title(parsed[0]) if parsed else ""
            heads.append((off(tok.map[0]), int(tok.tag[1:]), title))
    sections: List[Tuple[int, int, List[str]]] = []
    first = heads[0][0] if heads else n
    if first > 0 and text[:first].strip():
        sections.append((0, first, []))
    stack: List[Tuple[int, str]] = []
    for k, (a, level, title) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        b = heads[k + 1][0] if k + 1 < len(heads) else n
        sections.append((a, b, [t for _, t in stack]))
    return sections, blocks, items


class MarkdownNodeParser(FormatNodeParser):
    """Split Markdown into header sections (CommonMark via markdown-it-py).

    Args:
        chunk_size: token budget of a node, metadata embedded with it included; larger
            sections are cut by the span engine.  ``None``: no budget (one node per section).
        chunk_overlap: tokens of overlap between the pieces of a cut section.
        tokenizer: what budgets are measured in (default ``Settings.tokenizer``).
        header_path_separator: joins the titles of ``header_path`` (LlamaIndex's argument,
            default ``"/"``); a non-empty string.
        include_metadata, include_prev_next_rel, id_func, callback_manager: as in LlamaIndex.

    Raises:
        ValueError: bad ``chunk_size``/``chunk_overlap``; ``header_path_separator`` not a
            non-empty string.
    """

    def __init__(
        self,
        chunk_size: Optional[int] = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = 0,
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
        callback_manager: Any = None,
        header_path_separator: str = DEFAULT_HEADER_PATH_SEPARATOR,
    ) -> None:
        if not isinstance(header_path_separator, str) or not header_path_separator:
            raise ValueError(f"header_path_separator must be a non-empty string, got {header_path_separator!r}")
        super().__init__(chunk_size, chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self.header_path_separator = header_path_separator

    def _config_extra(self) -> Dict[str, Any]:
        if self.header_path_separator == DEFAULT_HEADER_PATH_SEPARATOR:
            return {}  # the default leaves the config (and so every node id) as before the argument existed
        return {"header_path_separator": self.header_path_separator}

    def _pieces(self, doc: BaseNode, text: str) -> List[Piece]:
        import bisect

        sections, blocks, items = markdown_sections(text)
        out: List[Piece] = []
        hidden = (HEADER_PATH_KEY, HEADER_PATH_LIST_KEY)
        for a, b, path in sections:
            # the first piece starts with the section's heading line (the title is in its
            # text): its display holds the ancestors only; later pieces get the full path
            head = self._path_meta(doc, path[:-1], path)
            rest = self._path_meta(doc, path, path)
            sub = text[a:b]
            if self.chunk_size is None:
                from ragloom.node_parser.text.engine import strip_span

                spans = [strip_span(sub, 0, len(sub))]
                spans = [s for s in spans if s[0] < s[1]]
            else:
                bl = [c - a for c in blocks[bisect.bisect_right(blocks, a): bisect.bisect_left(blocks, b)]]
                it = [c - a for c in items[bisect.bisect_right(items, a): bisect.bisect_left(items, b)]]
                levels = [CutLevel(bl, "block"), CutLevel(it, "list-item")] + sentence_levels("\n\n")
                wrappers = self._wrappers(doc, head, hidden, hidden)
                wrappers += [w for w in self._wrappers(doc, rest, hidden, hidden) if w not in wrappers]
                spans = self._pack(sub, levels, wrappers)  # every piece fits either metadata
            for s, e in spans:
                meta = head if path and not sub[:s].strip() else rest
                out.append(Piece(sub[s:e], a + s, a + e, meta, hidden, hidden))
        return out

    def _path_meta(self, doc: BaseNode, display: List[str], path: List[str]) -> Dict[str, Any]:
        """``header_path`` (LlamaIndex's string of ``path``'s ancestors), ``header_path_list``
        (the full ``path``) and ``header_path_display`` (``display``) unless that is empty or,
        with ``doc``'s embedded metadata, takes half of ``chunk_size`` or more."""
        sep = self.header_path_separator
        meta: Dict[str, Any] = {
            HEADER_PATH_KEY: sep + "".join(t + sep for t in path[:-1]),
            HEADER_PATH_LIST_KEY: list(path),
        }
        if not display:
            return meta
        meta[HEADER_PATH_DISPLAY_KEY] = DISPLAY_SEP.join(display)
        if self.chunk_size is not None:
            hidden = (HEADER_PATH_KEY, HEADER_PATH_LIST_KEY)
            probe = self._probe(doc, meta, hidden, hidden)
            tok = self.tokenizer
            used = max(tok.count(p) + tok.count(s) for p, s, _ in _wrappers_for(probe))
            if used >= _DISPLAY_MAX_SHARE * self.chunk_size:
                del meta[HEADER_PATH_DISPLAY_KEY]
        return meta
