"""Reading JSON out of an LLM's answer (LlamaIndex's ``parse_json_markdown``).

Models wrap JSON in Markdown code fences, put a sentence before or after it, or leave a trailing
comma.  :func:`parse_json_markdown` finds the JSON value in such an answer; it is the one JSON
reader of ragloom's selectors and sub-question generator.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator, Optional, Tuple

__all__ = ["OutputParserException", "parse_json_markdown"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
#: a block whose closing fence starts a line, as Markdown's does: read first, so a "```" inside a
#: JSON string (which holds no raw newline) does not end the block
_FENCE_LINE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\r?\n(.*?)\r?\n[ \t]*```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[\]}])")
#: how many candidate start positions ``raw_decode`` tries before giving up (bounds the work on a
#: long answer full of brackets; an answer's JSON starts within its first few brackets)
_MAX_STARTS = 64


class OutputParserException(ValueError):
    """An LLM's answer could not be read in the expected format (the message quotes the answer)."""


def _quote(text: str, limit: int = 500) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _candidates(text: str) -> Iterator[str]:
    """Texts that may be the JSON: each fenced block closed on its own line, each fenced block
    closed anywhere (an inline one), then the whole answer."""
    seen = set()
    for pattern in (_FENCE_LINE, _FENCE):
        for block in pattern.findall(text):
            block = block.strip()
            if block not in seen:
                seen.add(block)
                yield block
    yield text.strip()


def _scan(text: str) -> Optional[Tuple[int, Any]]:
    """``(start, value)`` of the first JSON array or object that starts at a ``[`` or ``{`` of
    ``text`` and decodes, or ``None``."""
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"[\[{]", text)][:_MAX_STARTS]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        return start, value
    return None


def _loads(text: str) -> Tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except json.JSONDecodeError:
        return False, None


def _read(candidate: str) -> Tuple[bool, Any]:
    """Decode ``candidate``: whole (as is, then repaired), else the earliest-starting value found
    in it or in its repaired form (an outer list with a trailing comma beats its first item)."""
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    for text in (candidate, repaired):
        ok, value = _loads(text)
        if ok:
            return True, value
    found = [f for f in (_scan(candidate), _scan(repaired)) if f is not None]
    if not found:
        return False, None
    return True, min(found, key=lambda f: f[0])[1]  # min keeps the first (unrepaired) on ties


def parse_json_markdown(text: str) -> Any:
    """The JSON value in an LLM answer.

    Candidates, in order: each Markdown code block (```` ```json ... ``` ```` or a bare fence), then
    the whole answer; the first that yields a value wins.  A candidate is decoded whole, then with
    trailing commas before ``]``/``}`` removed (a common small-model slip), then from the earliest
    ``[``/``{`` at which a JSON value decodes, in either form (so prose around the JSON is ignored).

    Returns:
        the decoded value (``dict``, ``list``, ``str``, number, ...).

    Raises:
        OutputParserException: (a ``ValueError``) no JSON could be read; the message quotes the
            first 500 characters of the answer.
    """
    if not isinstance(text, str):
        raise OutputParserException(f"expected the LLM's answer as a str, got {type(text).__name__}")
    for candidate in _candidates(text):
        if candidate:
            ok, value = _read(candidate)
            if ok:
                return value
    raise OutputParserException(f"the LLM's answer holds no readable JSON: {_quote(text)}")
