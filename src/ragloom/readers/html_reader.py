"""HTML: the readable text of a page (no markup, scripts, styles or navigation)."""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import ENCODING_KEY, REASON_EMPTY, read_text_file
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = ["HTMLReader", "html_to_text"]

# Elements whose content is never readable page text.
_DROP = frozenset(
    "script style noscript template svg math iframe object embed canvas nav select option "
    "datalist head button input textarea map area audio video source track".split()
)
# Elements that start a new line.
_BLOCK = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt "
    "fieldset figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 header hgroup hr html "
    "legend li listing main menu ol p plaintext pre section summary table tbody tfoot thead "
    "title tr ul xmp".split()
)
_CELLS = frozenset(("td", "th"))
_WS = re.compile(r"\s+")
_SPACES = re.compile(r"[ \t\u00a0]{2,}")


def _is_hidden(tag: Any) -> bool:
    attrs = tag.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    style = str(attrs.get("style", "")).replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _walk(node: Any, in_pre: bool, out: List[str]) -> None:
    from bs4.element import NavigableString, Tag

    for child in node.children:
        if isinstance(child, Tag):
            name = child.name.lower() if child.name else ""
            if name in _DROP or _is_hidden(child):
                continue
            if name == "br":
                out.append("\n")
                continue
            block = name in _BLOCK
            if block:
                out.append("\n")
            _walk(child, in_pre or name in ("pre", "listing", "plaintext", "xmp"), out)
            if name in _CELLS:
                out.append(" | ")
            elif block:
                out.append("\n")
        elif isinstance(child, NavigableString):
            # Comments, CDATA, doctypes and processing instructions are subclasses: skip them.
            if type(child) is not NavigableString:
                continue
            s = str(child)
            out.append(s if in_pre else _WS.sub(" ", s))


def html_to_text(markup: str) -> str:
    """Readable text of an HTML page.

    ``<title>`` comes first; then the body's text with block elements (paragraphs,
    headings, list items, table rows …) on their own lines, paragraphs separated by one blank
    line, table cells joined by ``" | "``, whitespace collapsed as a browser would (line
    breaks kept inside ``<pre>``).  Scripts, styles, ``<nav>``, form controls, comments and
    hidden elements are dropped; entities are decoded by the parser (lxml via BeautifulSoup).
    """
    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        # XHTML and XML-declared pages parse fine as HTML; the warning is noise here.
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(markup, "lxml")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    out: List[str] = []
    root = soup.body or soup
    try:
        _walk(root, False, out)
    except RecursionError:
        logger.debug("HTML nested too deeply; falling back to flat text")
        out = [root.get_text("\n")]
    lines: List[str] = []
    blank = False
    for raw in "".join(out).split("\n"):
        line = _SPACES.sub(" ", raw).strip()
        if line.endswith("|"):
            line = line.rstrip("| ").strip()
        if not line:
            blank = bool(lines)
            continue
        if blank:
            lines.append("")
            blank = False
        lines.append(line)
    if title and (not lines or lines[0] != title):
        lines = [title, ""] + lines
    return "\n".join(lines)


class HTMLReader(BaseReader):
    """Reads an HTML file into one document of readable text (see :func:`html_to_text`).

    The codec comes from a BOM, then the page's own declaration (``<meta charset>`` or
    ``http-equiv``, trusted only if it decodes), then strict UTF-8, then detection —
    unless ``encoding`` forces one.  Metadata ``encoding`` records it (hidden from
    embed/LLM views).

    Raises:
        ReaderError: ``"empty"`` (no readable text), ``"binary file"`` or a decoding failure.
    """

    assigns_ids = True

    def __init__(self, encoding: Optional[str] = None, errors: str = "strict") -> None:
        self.encoding = encoding
        self.errors = errors

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        from bs4.dammit import EncodingDetector

        file = Path(file)
        data = file.read_bytes()
        declared = None
        if self.encoding is None:
            declared = EncodingDetector.find_declared_encoding(data[:8192], is_html=True)
        text, enc = read_text_file(file, self.encoding, self.errors, declared=declared, data=data)
        body = html_to_text(text)
        if not body.strip():
            raise ReaderError(file_path_str(file), REASON_EMPTY)
        return [make_document(body, file, extra_info, metadata={ENCODING_KEY: enc}, hidden_keys=[ENCODING_KEY])]
