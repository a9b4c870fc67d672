"""EPUB e-books (``.epub``, EbookLib), extra ``ragloom[epub]`` (EbookLib is AGPL-3.0).

One document per chapter: each XHTML document of the spine, in reading order, as readable text
(:func:`~ragloom.readers.html_reader.html_to_text`: paragraphs and headings on their own lines,
table cells joined by ``" | "``; the page's ``<title>``, often the book's title on every page, is
left out).  Chapters without text (a cover image, an empty page) are left out.  Metadata:

- ``chapter``: the chapter's position among the spine's documents (1-based, as text; the
  navigation document, a table of contents, is not one; a left-out chapter keeps its number, so
  the numbers can skip);
- ``chapter_title``: its first ``<h1>`` / ``<h2>``, else the book's table of contents entry for
  it, else its ``<title>``; absent when none, or when that is just the book's title;
- ``book_title`` and ``book_author`` (the Dublin Core title and creators, creators joined by
  ``", "``; ``book_author`` hidden from the embed and LLM views); absent when the book has none.

A book whose content is encrypted (DRM: ``META-INF/encryption.xml`` listing anything but the
font obfuscation of the EPUB specification) is reported as ``"encrypted (DRM) EPUB"``.  Without the
extra installed, these files are reported as "unsupported format (… install ragloom[epub])".
"""

from __future__ import annotations

import html
import re
import warnings
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, make_document
from ragloom.readers.office import open_library_file
from ragloom.readers.html_reader import html_to_text
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["EpubReader"]

REASON_DRM = "encrypted (DRM) EPUB"

# Font obfuscation (EPUB's own and Adobe's): fonts only, the text stays readable.
_FONT_OBFUSCATION = frozenset(("http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"))
_WS = re.compile(r"\s+")
# A page's <title> (plain text in HTML); the self-closing form first, which HTML parsers read as an
# opening tag that swallows the page.
_TITLE = re.compile(r"<title\b[^>]*/>|<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


def _drm(file: Path) -> bool:
    """Whether the book's ``META-INF/encryption.xml`` encrypts anything beyond obfuscated fonts.

    Raises:
        zipfile.BadZipFile: not a zip package.
        xml.etree.ElementTree.ParseError: a malformed ``encryption.xml``.
    """
    with zipfile.ZipFile(file) as zf:
        try:
            data = zf.read("META-INF/encryption.xml")
        except KeyError:
            return False
    for el in ET.fromstring(data).iter():
        if isinstance(el.tag, str) and el.tag.rsplit("}", 1)[-1] == "EncryptionMethod":
            if el.get("Algorithm") not in _FONT_OBFUSCATION:
                return True
    return False


def _dc(book: Any, name: str) -> List[str]:
    values = [_WS.sub(" ", str(v)).strip() for v, _attrs in book.get_metadata("DC", name) if v]
    return [v for v in values if v]


def _toc_titles(entries: Any, out: Dict[str, str]) -> Dict[str, str]:
    """File name → the title of the first table of contents entry that points into it."""
    for entry in entries:
        node, children = (entry[0], entry[1]) if isinstance(entry, tuple) else (entry, ())  # (Section, [...])
        href, title = getattr(node, "href", None), _WS.sub(" ", getattr(node, "title", None) or "").strip()
        if href and title:
            out.setdefault(unquote(href.split("#", 1)[0]), title)
        _toc_titles(children, out)
    return out


def _decode(data: Any) -> str:
    """An XHTML document as text: UTF-8 (what EPUB requires), else its BOM or declared encoding."""
    from bs4.dammit import UnicodeDammit

    if isinstance(data, str):
        return data
    return UnicodeDammit(data or b"", ["utf-8"], is_html=True).unicode_markup or ""


def _first_heading(markup: str) -> Optional[str]:
    """The text of a page's first ``<h1>`` / ``<h2>`` with text (a line break as a space)."""
    from bs4 import BeautifulSoup, SoupStrainer, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(markup, "lxml", parse_only=SoupStrainer(["h1", "h2"]))
    for tag in soup.find_all(["h1", "h2"]):
        for br in tag.find_all("br"):
            br.replace_with(" ")
        text = _WS.sub(" ", tag.get_text()).strip()
        if text:
            return text
    return None


def _chapter(content: Any, book_title: Optional[str], toc_title: Optional[str]) -> Tuple[str, Optional[str]]:
    """A chapter's text (``""`` when it has none) and title: its first ``<h1>`` / ``<h2>``, else
    ``toc_title``, else its ``<title>``; ``None`` when that is only the book's title.  The
    ``<title>`` is not part of the text (a book often repeats its own title on every page)."""
    markup = _decode(content)
    match = _TITLE.search(markup)
    page_title = _WS.sub(" ", html.unescape(match.group(1) or "")).strip() if match else ""
    text = html_to_text(_TITLE.sub("", markup)).strip()
    title = _first_heading(markup) or toc_title or page_title
    return text, (title if title and title != book_title else None)


class EpubReader(BaseReader):
    """Reads an ``.epub`` book: one document per chapter with text, in reading order, metadata
    ``chapter``, ``chapter_title``, ``book_title`` and ``book_author`` (see the module docstring).

    Raises:
        ReaderError: ``"empty"``, ``"encrypted (DRM) EPUB"`` or ``"corrupt EPUB: ..."``.
    """

    assigns_ids = False

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        from ragloom._optional import require

        epub, file, path = open_library_file(file, "ebooklib.epub", "epub", "reading EPUB files")
        ebooklib = require("ebooklib", "epub", "reading EPUB files")
        docs: List[Document] = []
        try:
            if _drm(file):
                raise ReaderError(path, REASON_DRM)
            # ignore_ncx given: EbookLib warns about its future default otherwise
            book = epub.read_epub(str(file), {"ignore_ncx": True})
            titles, authors = _dc(book, "title"), _dc(book, "creator")
            book_md = {"book_title": titles[0]} if titles else {}
            if authors:
                book_md["book_author"] = ", ".join(authors)
            toc = _toc_titles(book.toc, {})
            number = 0
            for idref, _linear in book.spine:
                item = book.get_item_with_id(idref)
                if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or isinstance(item, epub.EpubNav):
                    continue  # not a document, or the navigation document (the table of contents)
                number += 1
                # the file's own bytes: EbookLib's get_content() rebuilds the page (dropping its <head>)
                text, title = _chapter(item.content, book_md.get("book_title"), toc.get(item.get_name()))
                if not text:
                    continue
                md: Dict[str, Any] = {"chapter": str(number), **({"chapter_title": title} if title else {})}
                md.update(book_md)
                docs.append(make_document(text, file, extra_info, metadata=md, hidden_keys=["book_author"]))
        except ReaderError:
            raise
        except Exception as exc:  # zipfile.BadZipFile, KeyError on a missing part, EpubException, lxml errors …
            raise ReaderError(path, f"corrupt EPUB: {type(exc).__name__}: {exc}", exc) from exc
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs
