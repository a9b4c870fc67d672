"""``CodeSplitter``: source code chunks that follow definitions (tree-sitter).

How chunks are made
-------------------
The file is parsed with tree-sitter and its syntax tree becomes boundary levels for the
shared span engine (:func:`~ragloom.node_parser.text.engine.pack_spans`, the packer of every
parser): cuts between top-level definitions > cuts between the children of a node at depth 1
> … > line breaks > tokens.  A cut lies at a line start with only indentation before it, never
right after a comment or decorator, nor between a header (``class A:``, ``void f() {``) and its
body.  The packer fills each chunk up to the budget and ends it at the start of the highest
syntax unit containing that point that fits, so a definition is split only when it does not fit
alone, and then at its inner statements (a single statement too large: at its lines, then tokens).

The budget is all of: ``max_chars`` characters, ``chunk_lines`` lines and ``chunk_size``
tokens (default ``Settings.chunk_size``, i.e. the embed model's limit) in ``tokenizer``
(default ``Settings.tokenizer``) on the embedded content (text plus embed-visible metadata),
so every chunk fits the model that embeds it.  The packer sees one size,
:class:`~ragloom.node_parser.text.engine.LimitSizer`: the largest of tokens, lines and
characters, each limit scaled to the token room.  With ``line_numbers=True`` the ``"42|"``
prefixes count too.  ``chunk_lines_overlap`` is the packer's overlap in the same scale (at most
that many lines, and the same share of the token and character limits), applied where a chunk
ends inside a syntax unit (a definition split across chunks).

Offsets contract: characters, never bytes (tree-sitter's byte offsets are converted), so
``doc.text[node.start_char_idx:node.end_char_idx] == node.text`` — except with
``line_numbers=True``, where ``node.text`` is that slice with ``"<line>|"`` before each
line.  Metadata: ``start_line`` / ``end_line`` (1-based, inclusive), hidden from the
embed and LLM views (they would change the content per chunk).

Failures — tree-sitter or the grammar not installed, unknown language, a parse with
syntax errors — fall back to packing whole lines within the same budget, with the reason
logged (once per splitter for a missing grammar).
"""

from __future__ import annotations

import bisect
import logging
import re
from typing import Any, Dict, List, Optional, Tuple

from ragloom._optional import MissingDependencyError
from ragloom.node_parser.code.languages import (
    LanguageUnavailable,
    canonical_language,
    get_parser,
)
from ragloom.node_parser.file.base import CutLevel, FormatNodeParser, Piece
from ragloom.node_parser.interface import IdFuncCallable
from ragloom.node_parser.text.boundaries import SeparatorLevel
from ragloom.node_parser.text.engine import (
    ExactCounter,
    LimitSizer,
    OffsetSizer,
    SpanCounter,
    make_sizers,
    pack_spans,
    wrapper_overhead,
)
from ragloom.schema import BaseNode

logger = logging.getLogger(__name__)

__all__ = ["CodeSplitter", "START_LINE_KEY", "END_LINE_KEY"]

START_LINE_KEY = "start_line"
END_LINE_KEY = "end_line"
_HIDDEN = (START_LINE_KEY, END_LINE_KEY)
_GLUE = re.compile("comment|decorator")  # syntax nodes that belong with the node after them

Span = Tuple[int, int]


def _char_offsets(text: str, data: bytes) -> Optional[Any]:
    """Byte offset → char offset map (``None`` when they are equal: ASCII text)."""
    if len(data) == len(text):
        return None
    import numpy as np

    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
    starts = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(widths, out=starts[1:])
    return starts


class CodeSplitter(FormatNodeParser):
    """Split code along its syntax tree (LlamaIndex's ``CodeSplitter`` arguments).

    Args:
        language: ``"python"``, ``"java"``, ``"javascript"``, ``"typescript"``, ``"tsx"``,
            ``"go"``, ``"rust"``, ``"c"``, ``"cpp"``, ``"c_sharp"`` (aliases such as ``"js"``,
            ``"c#"`` work).
        chunk_lines: most lines per chunk.
        chunk_lines_overlap: lines repeated from the previous chunk when a definition is
            split across chunks.
        max_chars: most characters per chunk.
        chunk_size: most tokens per chunk (embedded metadata included); ``None``: the
            process default ``Settings.chunk_size`` (254 with the bundled model).  LlamaIndex's
            CodeSplitter has no token budget; pass a large value to get its behaviour.
        tokenizer: what ``chunk_size`` is measured in (default ``Settings.tokenizer``).
        line_numbers: prefix each line of the node text with ``"<line>|"`` for display.
        parser: a ready ``tree_sitter.Parser`` (optional).
    """

    def __init__(
        self,
        language: str,
        chunk_lines: int = 40,
        chunk_lines_overlap: int = 15,
        max_chars: int = 1500,
        chunk_size: Optional[int] = None,
        tokenizer: Any = None,
        line_numbers: bool = False,
        parser: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
        callback_manager: Any = None,
    ) -> None:
        if chunk_size is None:
            from ragloom.settings import Settings

            chunk_size = Settings.chunk_size
        super().__init__(chunk_size, 0, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        if int(chunk_lines) <= 0:
            raise ValueError(f"chunk_lines must be > 0, got {chunk_lines}")
        if int(max_chars) <= 0:
            raise ValueError(f"max_chars must be > 0, got {max_chars}")
        if int(chunk_lines_overlap) < 0:
            raise ValueError(f"chunk_lines_overlap must be >= 0, got {chunk_lines_overlap}")
        self.language = canonical_language(language)
        self.chunk_lines = int(chunk_lines)
        self.chunk_lines_overlap = min(int(chunk_lines_overlap), int(chunk_lines) - 1)
        self.max_chars = int(max_chars)
        self.line_numbers = bool(line_numbers)
        self._parser = parser
        self._unavailable: Optional[Exception] = None
        self._warned = False

    def _config_extra(self) -> Dict[str, Any]:
        return {
            "language": self.language,
            "chunk_lines": self.chunk_lines,
            "chunk_lines_overlap": self.chunk_lines_overlap,
            "max_chars": self.max_chars,
            "line_numbers": self.line_numbers,
        }

    def _config_changed(self, name: str) -> None:
        super()._config_changed(name)
        if name == "language":  # a parser (even one passed in) is for the old language
            self._parser = None
            self._unavailable = None
            self._warned = False

    # -- parser --------------------------------------------------------------------------
    def _get_parser(self) -> Optional[Any]:
        """The tree-sitter parser, or ``None`` with the reason in :attr:`unavailable_reason` (not logged)."""
        if self._parser is None and self._unavailable is None:
            try:
                self._parser = get_parser(self.language)
            except (MissingDependencyError, LanguageUnavailable) as exc:
                self._unavailable = exc
        return self._parser

    @property
    def available(self) -> bool:
        """Whether a tree-sitter grammar for ``language`` is usable; ``False`` (never an error)
        when tree-sitter or the grammar is not installed or the language is unknown."""
        return self._get_parser() is not None

    @property
    def unavailable_reason(self) -> Optional[Exception]:
        """Why no tree-sitter parser is usable: a :class:`~ragloom._optional.MissingDependencyError`
        (the ``code`` extra is not installed) or a :class:`LanguageUnavailable` (no grammar, unknown
        language); ``None`` when :attr:`available`."""
        self._get_parser()
        return self._unavailable

    # -- chunking ------------------------------------------------------------------------
    def _pieces(self, doc: BaseNode, text: str) -> List[Piece]:
        line_starts = [0]
        i = text.find("\n")
        while i != -1:
            line_starts.append(i + 1)
            i = text.find("\n", i + 1)

        def line_of(p: int) -> int:  # 0-based line of char p
            return bisect.bisect_right(line_starts, p) - 1

        def render(a: int, b: int) -> str:
            chunk = text[a:b]
            if not self.line_numbers:
                return chunk
            first = line_of(a) + 1
            return "\n".join(f"{first + k}|{ln}" for k, ln in enumerate(chunk.split("\n")))

        levels = self._syntax_levels(doc, text) + [SeparatorLevel("\n", "line")]
        spans = self._pack_code(doc, text, levels, len(str(len(line_starts))) + 1, render)
        out: List[Piece] = []
        for a, b in spans:
            meta = {START_LINE_KEY: line_of(a) + 1, END_LINE_KEY: line_of(b - 1) + 1}
            out.append(Piece(render(a, b), a, b, meta, _HIDDEN, _HIDDEN))
        return out

    def _syntax_levels(self, doc: BaseNode, text: str) -> List[CutLevel]:
        """The syntax tree as boundary levels, highest first: level ``d`` cuts before every child
        (but the first) of the nodes at depth ``d`` (0: between top-level definitions), at the
        start of its line, and only where nothing but indentation precedes it on that line.
        Never between a comment or decorator and what follows it, nor between a header (the
        children on a node's first line: ``class A:``, ``void f() {``) and the child after it, so
        a header stays with the start of its body.  ``[]`` when the code cannot be parsed (the
        packer then cuts at lines), with the reason logged."""
        parser = self._get_parser()
        if parser is None:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "CodeSplitter(%s): %s; falling back to line splitting", self.language, self._unavailable
                )
            return []
        data = text.encode("utf-8", "surrogatepass")
        root = parser.parse(data).root_node
        if root.has_error:
            logger.warning(
                "CodeSplitter(%s): syntax errors in document %r; falling back to line splitting",
                self.language,
                doc.id_,
            )
            return []
        b2c = _char_offsets(text, data)

        def ch(byte: int) -> int:
            return byte if b2c is None else int(b2c.searchsorted(byte))

        cuts: List[List[int]] = []

        def cut(depth: int, p: int) -> None:
            q = text.rfind("\n", 0, p) + 1
            if 0 < q and not text[q:p].strip():
                while len(cuts) <= depth:
                    cuts.append([])
                cuts[depth].append(q)

        cut(0, ch(root.start_byte))
        cut(0, ch(root.end_byte))
        stack = [(root, 0)]
        while stack:
            node, depth = stack.pop()
            row = node.start_point[0]
            header = node is not root  # previous children all on the node's first line ("class A:")
            prev = None
            for kid in node.children:
                if prev is not None and not header and not _GLUE.search(prev.type):
                    cut(depth, ch(kid.start_byte))
                header = header and kid.end_point[0] == row
                prev = kid
                if kid.child_count:
                    stack.append((kid, depth + 1))
        return [CutLevel(c, f"syntax depth {d}") for d, c in enumerate(cuts) if c]

    def _pack_code(self, doc: BaseNode, text: str, levels: List[Any], width: int, render: Any) -> List[Span]:
        """Spans of ``text`` from the shared packer, within ``chunk_size`` tokens (embedded metadata
        included), ``chunk_lines`` lines and ``max_chars`` characters (:class:`LimitSizer`: a span's
        size is the largest of the three, each scaled to the token room).  ``chunk_lines_overlap``
        becomes the packer's overlap in the same scale: at most that many lines, and at most the
        same share of the token and character limits; the packer overlaps only where a chunk ends
        inside a unit (a definition split across chunks), as before."""
        if not text or text.isspace():
            return []
        counter: Any
        if self.chunk_size is None:  # no token budget: characters stand in for tokens
            wrappers = [("", "")]
            size = room = self.max_chars
            base: Any = OffsetSizer(text, range(len(text)))
            counter = _CharCounter()
        else:
            tok = self.tokenizer
            wrappers = self._wrappers(doc, {START_LINE_KEY: 0, END_LINE_KEY: 0}, _HIDDEN, _HIDDEN) or [("", "")]
            size = self.chunk_size
            room = size - wrapper_overhead(tok, wrappers)
            if room <= 0:
                raise ValueError(f"no room for text: the metadata take all of chunk_size {size}")
            base = make_sizers(tok, [text])[0]
            counter = _RenderedCounter(tok, render) if self.line_numbers else ExactCounter(tok, base)
        sizer = LimitSizer(base, room, self.chunk_lines, self.max_chars, width if self.line_numbers else 0)
        # overlap where a definition is split; none in the line fallback (no definitions known)
        overlap = -(-self.chunk_lines_overlap * room // self.chunk_lines) if len(levels) > 1 else 0
        return pack_spans(text, levels, sizer, counter, size, min(overlap, room - 1), wrappers)


class _RenderedCounter(SpanCounter):
    """Exact token count of a chunk as embedded with ``line_numbers=True`` (``"42|"`` prefixes)."""

    def __init__(self, tokenizer: Any, render: Any) -> None:
        self.tok = tokenizer
        self.render = render

    def count(self, a: int, b: int, prefix: str = "", suffix: str = "") -> int:
        return int(self.tok.count(prefix + self.render(a, b) + suffix))


class _CharCounter(SpanCounter):
    """Characters as the "tokens" of a chunk (``chunk_size=None``: no token budget)."""

    tok = None

    def count(self, a: int, b: int, prefix: str = "", suffix: str = "") -> int:
        return len(prefix) + b - a + len(suffix)
