"""``HTMLNodeParser``: one node per block element of raw HTML.

The HTML source (``doc.text``, e.g. from :class:`~ragloom.readers.flat.FlatReader`) is
walked with the standard library's tolerant ``html.parser``.  Block tags listed in
``tags`` (``p``, ``h1`` … ``li``, ``section``) start and end nodes; inline tags (``b``,
``i``, ``a``, ``span``, ``code`` …, see :data:`INLINE_TAGS`) never do — their text stays
inside its sentence, in document order, even when listed in ``tags`` (LlamaIndex's
default list names ``b``, ``i``, ``u``).  ``script``, ``style``, ``noscript`` and
``template`` content is dropped; entities and character references are decoded;
whitespace runs collapse to one space (kept inside ``<pre>``).  Text outside every
listed tag (a ``<div>``, a table cell) is kept as nodes of its own, tagged with the
enclosing block element, unless ``keep_untagged_text=False`` (LlamaIndex drops it).

Offsets contract: ``node.text`` is *extracted* text, not a slice of the source.
``node.start_char_idx``/``end_char_idx`` are character offsets into the **HTML source**
(``doc.text``): the slice starts at the source of the node's first character and ends
after the source of its last (an entity counts whole), so
``html_text(doc.text[start:end])`` (:func:`html_text`: the same extraction) equals the
node text up to whitespace.  Spans are in document order and do not overlap unless
``chunk_overlap > 0``.  A block over ``chunk_size`` tokens is cut by the span engine
(sentences, clauses, words) and each piece gets the source span of its own text.

Metadata: ``tag`` (the block element's name), visible, as in LlamaIndex.
"""

from __future__ import annotations

import html as _html
import logging
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragloom.node_parser.file.base import (
    DEFAULT_CHUNK_SIZE,
    FormatError,
    FormatNodeParser,
    Piece,
    sentence_levels,
)
from ragloom.node_parser.interface import IdFuncCallable
from ragloom.schema import BaseNode

logger = logging.getLogger(__name__)

__all__ = ["HTMLNodeParser", "DEFAULT_TAGS", "INLINE_TAGS", "html_text", "html_blocks"]

DEFAULT_TAGS = ["p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "b", "i", "u", "section"]
INLINE_TAGS = frozenset(
    "a abbr b bdi bdo big cite code data del dfn em font i img ins kbd label mark q s samp small span "
    "strike strong sub sup time tt u var wbr".split()
)
SKIP_TAGS = frozenset({"script", "style", "noscript", "template"})
# Elements that separate text even when not listed: untagged text is cut at them.
BREAK_TAGS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 head header hr html li main nav ol p pre section summary table tbody "
    "td tfoot th thead title tr ul".split()
)
SPACE_TAGS = frozenset({"br", "td", "th", "img", "wbr"})  # become whitespace inside a block

Segment = Tuple[str, str, List[int], List[int]]  # (tag, text, char starts, char ends) in the source


class _Extractor(HTMLParser):
    def __init__(self, source: str, blocks: frozenset, keep_untagged: bool) -> None:
        super().__init__(convert_charrefs=False)
        self.src = source
        self.blocks = blocks
        self.keep_untagged = keep_untagged
        self.line_starts = [0]
        i = source.find("\n")
        while i != -1:
            self.line_starts.append(i + 1)
            i = source.find("\n", i + 1)
        self.open: List[str] = []  # open listed block tags
        self.ctx: List[str] = []  # open unlisted break elements
        self.skip = 0
        self.pre = 0
        self.chars: List[str] = []
        self.starts: List[int] = []
        self.ends: List[int] = []
        self.segments: List[Segment] = []
        self.saw_tag = False

    # -- positions --------------------------------------------------------------------
    def _pos(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def _add(self, piece: str, a: int, b: Optional[int] = None) -> None:
        """Append ``piece`` whose source is ``src[a:a+len(piece)]`` (or all of ``src[a:b]``)."""
        if self.skip:
            return
        chars, starts, ends = self.chars, self.starts, self.ends
        for k, ch in enumerate(piece):
            s = a + k if b is None else a
            e = s + 1 if b is None else b
            if ch.isspace() and not self.pre:
                if not chars or chars[-1] == " ":
                    continue
                ch = " "
            chars.append(ch)
            starts.append(s)
            ends.append(e)

    def _space(self) -> None:
        if self.chars and self.chars[-1] != " " and not self.skip:
            self.chars.append(" ")
            p = self.ends[-1]
            self.starts.append(p)
            self.ends.append(p)

    def _flush(self) -> None:
        chars = self.chars
        while chars and chars[-1].isspace():
            chars.pop()
            self.starts.pop()
            self.ends.pop()
        if chars:
            if self.open:
                tag = self.open[-1]
            else:
                tag = self.ctx[-1] if self.ctx else "text"
            if self.open or self.keep_untagged:
                self.segments.append((tag, "".join(chars), self.starts, self.ends))
        self.chars, self.starts, self.ends = [], [], []

    # -- events -----------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.saw_tag = True
        if tag in SKIP_TAGS:
            self.skip += 1
            return
        if tag == "pre":
            self.pre += 1
        if tag in self.blocks:
            self._flush()
            self.open.append(tag)
        elif tag in BREAK_TAGS and not self.open:
            self._flush()
            self.ctx.append(tag)
        elif tag in SPACE_TAGS or tag in BREAK_TAGS:
            self._space()

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        self.saw_tag = True
        if tag in SPACE_TAGS or tag in BREAK_TAGS:
            self._space()

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_TAGS:
            self.skip = max(0, self.skip - 1)
            return
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.blocks and tag in self.open:
            self._flush()
            while self.open:
                if self.open.pop() == tag:
                    break
        elif tag in BREAK_TAGS and not self.open:
            self._flush()
            if tag in self.ctx:
                while self.ctx:
                    if self.ctx.pop() == tag:
                        break
        elif tag in SPACE_TAGS or tag in BREAK_TAGS:
            self._space()

    def handle_data(self, data: str) -> None:
        self._add(data, self._pos())

    def _ref(self, raw: str) -> None:
        a = self._pos()
        b = a + len(raw)
        if b < len(self.src) and self.src[b] == ";":
            b += 1
        self._add(_html.unescape(self.src[a:b]), a, b)

    def handle_entityref(self, name: str) -> None:
        self._ref("&" + name)

    def handle_charref(self, name: str) -> None:
        self._ref("&#" + name)


def html_blocks(
    source: str, tags: Sequence[str] = DEFAULT_TAGS, keep_untagged_text: bool = True, require_tags: bool = True
) -> List[Segment]:
    """The text blocks of an HTML source: ``(tag, text, starts, ends)`` with the source span
    ``[starts[i], ends[i])`` of every character of ``text``.

    Raises:
        FormatError: the source cannot be parsed, or (``require_tags``) has no tag at all.
    """
    blocks = frozenset(t.lower() for t in tags) - INLINE_TAGS
    ex = _Extractor(source, blocks, keep_untagged_text)
    try:
        ex.feed(source)
        ex.close()
    except AssertionError as exc:  # html.parser's only complaint, e.g. "<![foo[": not parseable HTML
        raise FormatError(f"cannot parse HTML: {exc}") from exc
    ex._flush()
    if require_tags and not ex.saw_tag:
        raise FormatError("no HTML tags found")
    return ex.segments


def html_text(source: str, tags: Sequence[str] = DEFAULT_TAGS, keep_untagged_text: bool = True) -> str:
    """The extracted text of an HTML fragment (blocks joined by newlines).

    Raises:
        FormatError: the fragment cannot be parsed as HTML.
    """
    return "\n".join(seg[1] for seg in html_blocks(source, tags, keep_untagged_text, require_tags=False))


class HTMLNodeParser(FormatNodeParser):
    """Split raw HTML into nodes per block element (see the module docs for offsets).

    Args:
        tags: block tags that make nodes (LlamaIndex's default list); inline tags in it
            are ignored as boundaries.
        keep_untagged_text: keep text outside every listed tag (default ``True``).
        chunk_size: token budget of a node with its embedded metadata (``None``: none).
        chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func: as usual.
    """

    def __init__(
        self,
        tags: Optional[List[str]] = None,
        keep_untagged_text: bool = True,
        chunk_size: Optional[int] = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = 0,
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
        callback_manager: Any = None,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self.tags = list(DEFAULT_TAGS if tags is None else tags)
        self.keep_untagged_text = keep_untagged_text

    def _config_extra(self) -> Dict[str, Any]:
        return {"tags": self.tags, "keep_untagged_text": self.keep_untagged_text}

    def _pieces(self, doc: BaseNode, text: str) -> List[Piece]:
        if "<" not in text:
            raise FormatError("no HTML tags found")
        out: List[Piece] = []
        levels = sentence_levels("\n\n")
        for tag, block, starts, ends in html_blocks(text, self.tags, self.keep_untagged_text):
            meta = {"tag": tag}
            if self.chunk_size is None:
                from ragloom.node_parser.text.engine import strip_span

                spans = [strip_span(block, 0, len(block))]
            else:
                spans = self._pack(block, levels, self._wrappers(doc, meta))
            for s, e in spans:
                if s < e:
                    out.append(Piece(block[s:e], starts[s], ends[e - 1], meta))
        return out
