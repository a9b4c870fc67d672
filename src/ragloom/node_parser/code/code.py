"""``CodeSplitter``: source code chunks that follow definitions (tree-sitter).

How chunks are made
-------------------
The file is parsed with tree-sitter.  A syntax node that fits the budget is an *atom*
(a whole function, class, method, statement …); a node that does not is replaced by its
children, recursively, so a definition too large is split at its inner statements (and a
single statement too large at its lines, then characters).  Consecutive atoms are packed
greedily into chunks within the budget; when the next atom does not fit, the chunk ends
at the preceding boundary that is highest in the syntax tree (e.g. between two methods
rather than inside the second), unless that would leave the chunk less than half full.

The budget is all of: ``max_chars`` characters, ``chunk_lines`` lines and ``chunk_size``
tokens (default ``Settings.chunk_size``, i.e. the embed model's limit) in ``tokenizer``
(default ``Settings.tokenizer``) on the embedded content (text plus embed-visible metadata),
so every chunk fits the model that embeds it.  With
``line_numbers=True`` the ``"42|"`` prefixes count too.  When a chunk boundary falls
inside a definition, the next chunk starts up to ``chunk_lines_overlap`` whole lines
earlier (as many as fit).

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
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragloom._optional import MissingDependencyError
from ragloom.node_parser.code.languages import (
    LanguageUnavailable,
    canonical_language,
    get_parser,
)
from ragloom.node_parser.file.base import FormatNodeParser, Piece
from ragloom.node_parser.interface import IdFuncCallable
from ragloom.schema import BaseNode

logger = logging.getLogger(__name__)

__all__ = ["CodeSplitter", "START_LINE_KEY", "END_LINE_KEY"]

START_LINE_KEY = "start_line"
END_LINE_KEY = "end_line"
_HIDDEN = (START_LINE_KEY, END_LINE_KEY)

Atom = Tuple[int, int, int]  # (start char, end char, depth in the syntax tree)


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
    # one tree walk with its closures over the parse (kept whole until CodeSplitter hands its syntax
    # boundaries to the shared packer, docs/architecture.md "Known gaps")
    def _pieces(self, doc: BaseNode, text: str) -> List[Piece]:  # noqa: C901
        n = len(text)
        line_starts = [0]
        i = text.find("\n")
        while i != -1:
            line_starts.append(i + 1)
            i = text.find("\n", i + 1)
        wrappers = (
            self._wrappers(doc, {START_LINE_KEY: 0, END_LINE_KEY: 0}, _HIDDEN, _HIDDEN) if self.chunk_size else []
        )
        tok = self.tokenizer if self.chunk_size else None
        width = len(str(len(line_starts))) + 1
        max_chars, max_lines, budget = self.max_chars, self.chunk_lines, self.chunk_size
        prefixed = self.line_numbers

        def line_of(p: int) -> int:  # 0-based line of char p
            return bisect.bisect_right(line_starts, p) - 1

        def render(a: int, b: int) -> str:
            chunk = text[a:b]
            if not prefixed:
                return chunk
            first = line_of(a) + 1
            return "\n".join(f"{first + k}|{ln}" for k, ln in enumerate(chunk.split("\n")))

        def fits(a: int, b: int) -> bool:
            lines = text.count("\n", a, b) + 1
            if lines > max_lines:
                return False
            chars = b - a + (lines * width if prefixed else 0)
            if chars > max_chars:
                return False
            if budget:
                body = render(a, b)
                for p, s in wrappers:
                    if tok.count(p + body + s) > budget:
                        return False
                if not wrappers and tok.count(body) > budget:
                    return False
            return True

        def split_lines(a: int, b: int, depth: int) -> List[Atom]:
            """Atoms of an oversized region: whole lines, a too-long line by characters."""
            out: List[Atom] = []
            k = line_of(a)
            pos = a
            while pos < b:
                nl = text.find("\n", pos, b)
                e = b if nl == -1 else nl + 1
                s2, e2 = pos, e
                while s2 < e2 and text[s2].isspace():
                    s2 += 1
                while e2 > s2 and text[e2 - 1].isspace():
                    e2 -= 1
                while s2 < e2:
                    if fits(s2, e2):
                        out.append((s2, e2, depth))
                        break
                    lo, hi = s2 + 1, e2  # largest cut c with fits(s2, c)
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        if fits(s2, mid):
                            lo = mid
                        else:
                            hi = mid
                    c = lo
                    if 0xDC00 <= ord(text[c]) <= 0xDFFF and c - 1 > s2:  # keep surrogate pairs whole
                        c -= 1
                    if not fits(s2, c):
                        raise ValueError(
                            f"cannot fit one character at {s2} into the budget (chunk_size={budget}, "
                            f"max_chars={max_chars}); the metadata may take the whole budget"
                        )
                    out.append((s2, c, depth))
                    s2 = c
                pos = e
                k += 1
            return out

        parser = self._get_parser()
        atoms: List[Atom]
        glued: set = set()  # atoms (comments) that belong with the atom after them
        if parser is None:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "CodeSplitter(%s): %s; falling back to line splitting", self.language, self._unavailable
                )
            atoms = split_lines(0, n, 1)
        else:
            data = text.encode("utf-8", "surrogatepass")
            tree = parser.parse(data)
            root = tree.root_node
            if root.has_error:
                logger.warning(
                    "CodeSplitter(%s): syntax errors in document %r; falling back to line splitting",
                    self.language, doc.id_,
                )
                atoms = split_lines(0, n, 1)
            else:
                b2c = _char_offsets(text, data)

                def ch(byte: int) -> int:
                    return byte if b2c is None else int(b2c.searchsorted(byte))

                atoms = []

                def walk(node: Any, depth: int, force: bool = False) -> None:
                    a, b = ch(node.start_byte), ch(node.end_byte)
                    if a >= b or text[a:b].isspace():
                        return
                    if depth > 0 and not force and fits(a, b):
                        atoms.append((a, b, depth))
                        if "comment" in node.type:
                            glued.add(len(atoms) - 1)
                        return
                    kids = node.children
                    if not kids:
                        atoms.extend(split_lines(a, b, depth + 1))
                        return
                    pos = a
                    header = True  # the short children before the body ("class A:", a signature)
                    for kid in kids:
                        ka, kb = ch(kid.start_byte), ch(kid.end_byte)
                        if ka > pos and text[pos:ka].strip():
                            atoms.extend(split_lines(pos, ka, depth + 1))
                        # a body that fits alone but not after its header is opened too, so
                        # the header is packed with the body's first statements
                        body = header and ka > a and kid.child_count > 0 and "\n" in text[ka:kb]
                        walk(kid, depth + 1, force=body and not fits(a, kb))
                        if kid.child_count > 0 and "\n" in text[ka:kb]:
                            header = False
                        pos = max(pos, kb)
                    if b > pos and text[pos:b].strip():
                        atoms.extend(split_lines(pos, b, depth + 1))

                walk(root, 0)
                if root.start_byte > 0 or ch(root.end_byte) < n:  # text outside the root node
                    a0, b0 = ch(root.start_byte), ch(root.end_byte)
                    head = split_lines(0, a0, 1) if text[:a0].strip() else []
                    tail = split_lines(b0, n, 1) if text[b0:].strip() else []
                    glued = {k + len(head) for k in glued}
                    atoms = head + atoms + tail
        spans = self._pack_atoms(text, atoms, glued, fits, line_starts, line_of)
        out: List[Piece] = []
        for a, b in spans:
            meta = {START_LINE_KEY: line_of(a) + 1, END_LINE_KEY: line_of(b - 1) + 1}
            out.append(Piece(render(a, b), a, b, meta, _HIDDEN, _HIDDEN))
        return out

    def _pack_atoms(  # noqa: C901 - one greedy loop with its back-off cases (see the module doc)
        self, text: str, atoms: Sequence[Atom], glued: set, fits: Any, line_starts: List[int], line_of: Any
    ) -> List[Tuple[int, int]]:
        spans: List[Tuple[int, int]] = []
        i, m = 0, len(atoms)
        start = atoms[0][0] if atoms else 0
        while i < m:
            a = start
            j = i
            while j + 1 < m and fits(a, atoms[j + 1][1]):
                j += 1
            end_k = j
            if j + 1 < m:
                # prefer the boundary highest in the tree and not right after a comment, if
                # the chunk stays at least half full
                full = atoms[j][1] - a
                best: Optional[Tuple[int, int]] = None
                for k in range(j, i - 1, -1):
                    if atoms[k][1] - a < full / 2:
                        break
                    if k in glued:
                        continue
                    if best is None or atoms[k + 1][2] < best[0]:
                        best = (atoms[k + 1][2], k)
                if best is not None:
                    end_k = best[1]
                while end_k in glued and end_k - 1 >= i:  # keep a comment with what follows it
                    end_k -= 1
            b = atoms[end_k][1]
            spans.append((a, b))
            i = end_k + 1
            if i >= m:
                break
            start = atoms[i][0]
            # overlap: when the boundary is inside a definition, repeat whole lines before it
            if self.chunk_lines_overlap and atoms[i][2] > 1:
                li = line_of(start)
                for back in range(self.chunk_lines_overlap, 0, -1):
                    if li - back < 0:
                        continue
                    cand = line_starts[li - back]
                    while cand < start and text[cand].isspace():
                        cand += 1
                    if a < cand < start and fits(cand, atoms[i][1]):
                        start = cand
                        break
        return spans

