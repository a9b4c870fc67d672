"""``JSONNodeParser``: JSON flattened into readable ``path: value`` lines.

Every scalar of the document becomes one line ``a.b[0]["key with space"]: value``
(strings as they are unless they hold a line break, then JSON-quoted; empty objects and
arrays as ``{}`` / ``[]``).  The lines are packed by the span engine within
``chunk_size`` tokens, cut preferably where the top-level key or array index changes,
then where the second path component changes, then between lines, then words — so a
large array is split between its elements.  JSON Lines (one value per line, ``.jsonl``
/ ``.ndjson``) is accepted too; each record's paths start with ``[record number]``.

Offsets contract: ``node.text`` is flattened text, not a slice of the source.
``node.start_char_idx``/``end_char_idx`` are character offsets into the **JSON source**
(``doc.text``): from the first of the node's lines' member key (or array value) to the
end of its last line's value.  Spans are in document order.

Text that is not JSON but :func:`~ragloom.readers.json_reader.json_to_text`'s YAML-like rendering
(what ``SimpleDirectoryReader`` makes of a ``.json`` file: ``key: value`` lines, ``-`` list items,
two spaces per level) is cut at its structure instead: where a top-level entry starts, then a
second-level one, then between lines, then at sentences, clauses and words.  Its nodes are slices
of ``doc.text`` (exact offsets), and a key stays on its value's line unless that line alone
exceeds the budget.  Other text falls back to sentence splitting (logged).
"""

from __future__ import annotations

import bisect
import json as _json
import re
from typing import Any, List, Optional, Tuple

from ragloom.node_parser.file.base import (
    DEFAULT_CHUNK_SIZE,
    CutLevel,
    FormatError,
    FormatNodeParser,
    Piece,
)
from ragloom.node_parser.interface import IdFuncCallable
from ragloom.schema import BaseNode

__all__ = ["JSONNodeParser", "flatten_json"]

_WS = re.compile(r"[ \t\n\r]*")
#: the first line of :func:`~ragloom.readers.json_reader.json_to_text`'s rendering: a list item
#: (``-`` or ``- value``) or a key (``key:`` or ``key: value``) at the first level
_RENDERED_FIRST = re.compile(r"(?:-|[^\s\-\[{\"][^\n:]*:)(?:[ \n]|\Z)")
#: a line break before a line of the rendering's first level / of its second level (two spaces) /
#: before any line; none follows a list item's lone ``-`` line (which stays with the item's first key)
_LINE_BREAK = r"(?<![\n ]-)(?<!\A-)\n"
_TOP_ENTRY = re.compile(_LINE_BREAK + r"(?=[^ \n])")
_SECOND_ENTRY = re.compile(_LINE_BREAK + r"(?=  [^ \n])")
_ANY_LINE = re.compile(_LINE_BREAK)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_DEC = _json.JSONDecoder()

Line = Tuple[Tuple[Any, ...], str, int, int]  # (path, rendered value, source start, source end)


def _fmt_key(path: Tuple[Any, ...]) -> str:
    out: List[str] = []
    for k in path:
        if isinstance(k, int):
            out.append(f"[{k}]")
        elif _IDENT.match(k):
            out.append(("." if out else "") + k)
        else:
            out.append("[" + _json.dumps(k, ensure_ascii=False) + "]")
    return "".join(out)


def _fmt_value(v: Any) -> str:
    if isinstance(v, str):
        if v and "\n" not in v and "\r" not in v and v == v.strip():
            return v
        return _json.dumps(v, ensure_ascii=False)
    return _json.dumps(v, ensure_ascii=False)


def _ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()  # type: ignore[union-attr]


def _walk(s: str, i: int, path: Tuple[Any, ...], lead: int, out: List[Line]) -> int:
    """Scan the JSON value at ``s[i:]`` (after whitespace); append its lines; return its end."""
    i = _ws(s, i)
    if i >= len(s):
        raise FormatError("unexpected end of JSON")
    c = s[i]
    if c == "{":
        j = _ws(s, i + 1)
        if s.startswith("}", j):
            out.append((path, "{}", lead, j + 1))
            return j + 1
        while True:
            if not s.startswith('"', j):
                raise FormatError(f"expected a key at char {j}")
            key, k = _DEC.raw_decode(s, j)
            k = _ws(s, k)
            if not s.startswith(":", k):
                raise FormatError(f"expected ':' at char {k}")
            k = _walk(s, k + 1, path + (key,), j, out)
            k = _ws(s, k)
            if s.startswith(",", k):
                j = _ws(s, k + 1)
                continue
            if s.startswith("}", k):
                return k + 1
            raise FormatError(f"expected ',' or '}}' at char {k}")
    if c == "[":
        j = _ws(s, i + 1)
        if s.startswith("]", j):
            out.append((path, "[]", lead, j + 1))
            return j + 1
        idx = 0
        while True:
            j = _ws(s, j)
            k = _walk(s, j, path + (idx,), j, out)
            idx += 1
            k = _ws(s, k)
            if s.startswith(",", k):
                j = k + 1
                continue
            if s.startswith("]", k):
                return k + 1
            raise FormatError(f"expected ',' or ']' at char {k}")
    try:
        v, end = _DEC.raw_decode(s, i)
    except ValueError as exc:
        raise FormatError(str(exc)) from exc
    out.append((path, _fmt_value(v), min(lead, i), end))
    return end


def flatten_json(source: str) -> List[Line]:
    """The ``(path, value, source start, source end)`` lines of a JSON or JSON Lines text."""
    out: List[Line] = []
    try:
        i = _ws(source, 0)
        end = _walk(source, i, (), i, out)
        if _ws(source, end) != len(source):
            raise FormatError(f"extra data at char {end}")
        return out
    except (FormatError, ValueError, RecursionError) as first:
        out = []
        pos, rec = 0, 0
        for raw in source.splitlines(keepends=True):
            if raw.strip():
                i = _ws(source, pos)
                try:
                    end = _walk(source, i, (rec,), i, out)
                except (FormatError, ValueError, RecursionError):
                    raise FormatError(f"not JSON: {first}") from first
                if source[end : pos + len(raw)].strip():
                    raise FormatError(f"not JSON: {first}") from first
                rec += 1
            pos += len(raw)
        if rec < 2:
            raise FormatError(f"not JSON: {first}") from first
        return out


class JSONNodeParser(FormatNodeParser):
    """Flatten JSON into ``path: value`` lines and pack them within ``chunk_size`` tokens.

    Args:
        chunk_size: token budget per node, embedded metadata included (``None``: one node
            per document).
        chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func: as usual.
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
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)

    def _pieces(self, doc: BaseNode, text: str) -> List[Piece]:
        from ragloom.node_parser.text.boundaries import SeparatorLevel

        try:
            lines = flatten_json(text)
        except FormatError:
            if not _RENDERED_FIRST.match(text, _ws(text, 0)):
                raise
            return self._rendered_pieces(doc, text)
        if not lines:
            return []
        rendered: List[str] = []
        starts: List[int] = []
        cut1: List[int] = []
        cut2: List[int] = []
        pos = 0
        prev: Optional[Tuple[Any, ...]] = None
        for path, value, _, _ in lines:
            key = _fmt_key(path)
            line = f"{key}: {value}" if key else value
            if prev is not None:
                if path[:1] != prev[:1]:
                    cut1.append(pos)
                if path[:2] != prev[:2]:
                    cut2.append(pos)
            starts.append(pos)
            rendered.append(line)
            pos += len(line) + 1
            prev = path
        flat = "\n".join(rendered)
        if self.chunk_size is None:
            spans = [(0, len(flat))]
        else:
            levels = [
                CutLevel(cut1, "json-top"),
                CutLevel(cut2, "json-second"),
                SeparatorLevel("\n", "line"),
                SeparatorLevel(" ", "word"),
            ]
            spans = self._pack(flat, levels, self._wrappers(doc, {}))
        out: List[Piece] = []
        for s, e in spans:
            if s >= e:
                continue
            first = bisect.bisect_right(starts, s) - 1
            last = bisect.bisect_right(starts, e - 1) - 1
            out.append(Piece(flat[s:e], lines[first][2], lines[last][3], {}))
        return out

    def _rendered_pieces(self, doc: BaseNode, text: str) -> List[Piece]:
        """Pieces of ``text`` in :func:`~ragloom.readers.json_reader.json_to_text`'s rendering: slices
        cut where a first-level entry starts, then a second-level one, then between lines, then as
        the sentence splitter cuts (sentences, clauses, words)."""
        from ragloom.node_parser.file.base import sentence_levels
        from ragloom.node_parser.text.engine import strip_span

        if self.chunk_size is None:
            spans = [strip_span(text, 0, len(text))]
        else:
            levels = [
                CutLevel([m.end() for m in _TOP_ENTRY.finditer(text)], "json-top"),
                CutLevel([m.end() for m in _SECOND_ENTRY.finditer(text)], "json-second"),
                CutLevel([m.end() for m in _ANY_LINE.finditer(text)], "line"),
                *(level for level in sentence_levels("") if level.name != "line"),
            ]
            spans = self._pack(text, levels, self._wrappers(doc, {}))
        return [Piece(text[s:e], s, e, {}) for s, e in spans if s < e]
