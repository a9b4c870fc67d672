"""Reading knowledge triplets out of an LLM's answer.

:func:`parse_triplets` accepts what models actually write, not only LlamaIndex's exact
``(subject, predicate, object)`` line: numbered or bulleted lines, several triplets on one line,
full-width Chinese brackets and commas ``（萧炎，妹妹，萧薰儿）``, quoted parts that contain commas,
markdown emphasis, and arrow lines ``A -> rel -> B``.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ragloom.graph_stores.types import entity_key

__all__ = ["parse_triplets", "triplet_text", "DEFAULT_MAX_OBJECT_LENGTH"]

#: LlamaIndex's cap on the length of one part of a triplet, in UTF-8 **bytes** (longer parts mean the
#: model wrote a sentence, not a name; such triplets are dropped)
DEFAULT_MAX_OBJECT_LENGTH = 128

Triple = Tuple[str, str, str]

_OPEN = "(（"
_CLOSE = ")）"
_COMMAS = ",，"
#: quote pairs a part may be wrapped in (a comma inside them does not split)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "`": "`"}
_STRIP = " \t\r\n\"'“”‘’「」『』`*_"
_ARROW = re.compile(r"\s*(?:->|→|⟶|=>)\s*")


def triplet_text(triplet: Triple) -> str:
    """How a triplet is shown to models and embedded: ``"(subject, relation, object)"``."""
    return f"({triplet[0]}, {triplet[1]}, {triplet[2]})"


def _groups(line: str) -> List[str]:
    """The contents of the top-level bracket groups of ``line`` (nested brackets stay inside)."""
    out: List[str] = []
    depth, start = 0, -1
    for i, ch in enumerate(line):
        if ch in _OPEN:
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch in _CLOSE and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(line[start:i])
    return out


def _split_parts(group: str, quotes: bool = True) -> List[str]:
    """``group`` split at commas that are outside quotes (when ``quotes``; a quote left open splits
    again without them) and nested brackets."""
    parts: List[str] = []
    buf: List[str] = []
    closing: Optional[str] = None
    depth = 0
    for ch in group:
        if closing is not None:
            buf.append(ch)
            if ch == closing:
                closing = None
            continue
        if quotes and ch in _QUOTES and not "".join(buf).strip(" \t"):
            closing = _QUOTES[ch]
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth:
            depth -= 1
        elif ch in _COMMAS and depth == 0:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    if closing is not None:
        return _split_parts(group, quotes=False)
    parts.append("".join(buf))
    return parts


def _triplet(parts: List[str], max_length: int) -> Optional[Triple]:
    cleaned = [p.strip(_STRIP) for p in parts]
    if len(cleaned) < 3:
        return None
    if len(cleaned) > 3:  # an object that contains a comma: "(Philz, founded in, Berkeley, California)"
        cleaned = [cleaned[0], cleaned[1], ", ".join(c for c in cleaned[2:] if c)]
    if not all(cleaned) or any(len(c.encode("utf-8", "surrogatepass")) > max_length for c in cleaned):
        return None
    return cleaned[0], cleaned[1], cleaned[2]


def parse_triplets(
    response: str, max_length: int = DEFAULT_MAX_OBJECT_LENGTH, max_triplets: Optional[int] = None
) -> List[Triple]:
    """The ``(subject, relation, object)`` triplets written in ``response``, in order, each once.

    Every bracketed group ``( … )`` / ``（ … ）`` of every line is a candidate; its parts are split at
    ``,`` or ``，`` outside quotes and nested brackets.  Three parts make a triplet; more than three
    keep the first two and join the rest into the object (an object that contains a comma).  A line
    with no bracket but two arrows (``A -> rel -> B``) is one triplet too.  Parts are stripped of
    spaces, quotes and markdown emphasis; a triplet with an empty part, or a part longer than
    ``max_length`` UTF-8 bytes (a sentence, not a name), is dropped.  Repeats (compared by
    :func:`~ragloom.graph_stores.types.entity_key` of each part) are dropped.  At most
    ``max_triplets`` are returned (``None``: all).

    Differences from LlamaIndex's parser: it takes only the first group of a line and exactly three
    ASCII-comma parts, and capitalises every part (``"New York"`` becomes ``"New york"``); ragloom
    keeps the spelling the model wrote.

    Raises:
        ValueError: ``max_length`` < 1 or ``max_triplets`` < 0.
    """
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1 (UTF-8 bytes), got {max_length!r}")
    if max_triplets is not None and (isinstance(max_triplets, bool) or not isinstance(max_triplets, int)
                                     or max_triplets < 0):
        raise ValueError(f"max_triplets must be None or an int >= 0, got {max_triplets!r}")
    out: List[Triple] = []
    seen = set()
    for line in response.splitlines():
        groups = _groups(line)
        candidates = [_split_parts(g) for g in groups]
        if not groups and len(_ARROW.split(line.strip())) == 3:
            candidates = [_ARROW.split(line.strip())]
        for parts in candidates:
            triplet = _triplet(parts, max_length)
            if triplet is None:
                continue
            key = tuple(entity_key(p) for p in triplet)
            if key in seen:
                continue
            seen.add(key)
            out.append(triplet)
            if max_triplets is not None and len(out) >= max_triplets:
                return out
    return out
