"""``SimpleFileNodeParser`` and ``CodeTextRouter``: pick a node parser per document by
its file extension.

The extension is read from the document's metadata: ``extension`` (set by
:class:`~ragloom.readers.flat.FlatReader`), else the suffix of ``file_path`` /
``file_name`` / ``filename``.

- code (``.py``, ``.java``, ``.cs``, ``.ts``/``.tsx``, ``.js``/``.jsx``, ``.go``, ``.rs``,
  ``.c``/``.h``, ``.cpp`` …, see :data:`~ragloom.node_parser.code.CODE_EXTENSIONS`) →
  :class:`~ragloom.node_parser.code.CodeSplitter`;
- ``.md``/``.markdown``/``.mdx`` → :class:`MarkdownNodeParser`, ``.html``/``.htm``/``.xhtml``
  → :class:`HTMLNodeParser`, ``.json``/``.jsonl``/``.ndjson`` → :class:`JSONNodeParser`
  (``SimpleFileNodeParser`` only);
- everything else → :class:`~ragloom.node_parser.SentenceSplitter`.

Fallbacks to sentence splitting, each with a logged reason: tree-sitter not installed
(the ``code`` extra; one warning per router, naming the extra), no grammar for a language
(one warning per language), a document that does not parse as its format (in the format
parser, :class:`~ragloom.node_parser.file.base.FormatError`).  Any other error propagates.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, List, Optional, Sequence

from ragloom._optional import MissingDependencyError
from ragloom.node_parser.interface import IdFuncCallable, NodeParser
from ragloom.schema import BaseNode

logger = logging.getLogger(__name__)

__all__ = ["SimpleFileNodeParser", "CodeTextRouter", "FORMAT_EXTENSIONS", "extension_of"]

FORMAT_EXTENSIONS: Dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".mkd": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}


def extension_of(node: BaseNode) -> str:
    """The lower-case file extension of a document (``""`` if unknown)."""
    md = node.metadata or {}
    ext = md.get("extension")
    if isinstance(ext, str) and ext:
        ext = ext.lower()
        return ext if ext.startswith(".") else "." + ext
    for key in ("file_path", "file_name", "filename"):
        v = md.get(key)
        if isinstance(v, str) and v:
            return os.path.splitext(v)[1].lower()
    return ""


class SimpleFileNodeParser(NodeParser):
    """Route each document to the parser of its file type (see the module docs).

    Args:
        chunk_size: token budget of every parser (default 1024).
        chunk_overlap: overlap of the sentence splitter (the format parsers cut at structure).
        tokenizer: what budgets are measured in (default ``Settings.tokenizer``).
        code_chunk_lines, code_chunk_lines_overlap, code_max_chars: the CodeSplitter's limits.
        line_numbers: ``"42|"`` prefixes on code nodes.
        html_tags: the HTMLNodeParser's block tags (its default if ``None``).
        include_metadata, include_prev_next_rel, id_func: passed to every parser.
        formats: the formats routed to their own parser (default: all of ``"code"``, ``"markdown"``,
            ``"html"``, ``"json"``); the others are sentence-split.

    Raises:
        ValueError: an unknown name in ``formats``.

    The arguments stay assignable (``router.chunk_size = 512``): the per-format parsers are
    built again, from the new values, on next use.
    """

    formats = ("code", "markdown", "html", "json")

    def __init__(
        self,
        chunk_size: int = 1024,
        chunk_overlap: int = 200,
        tokenizer: Any = None,
        code_chunk_lines: int = 40,
        code_chunk_lines_overlap: int = 15,
        code_max_chars: int = 1500,
        line_numbers: bool = False,
        html_tags: Optional[List[str]] = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
        callback_manager: Any = None,
        formats: Optional[Sequence[str]] = None,
    ) -> None:
        if formats is not None:
            unknown = set(formats) - set(SimpleFileNodeParser.formats)
            if unknown:
                raise ValueError(f"formats must be among {list(SimpleFileNodeParser.formats)}, got {sorted(unknown)}")
            self.formats = tuple(formats)
        self.chunk_size = int(chunk_size)
        self.chunk_overlap = min(int(chunk_overlap), self.chunk_size - 1)
        self.tokenizer = tokenizer
        self.code_chunk_lines = code_chunk_lines
        self.code_chunk_lines_overlap = code_chunk_lines_overlap
        self.code_max_chars = code_max_chars
        self.line_numbers = line_numbers
        self.html_tags = html_tags
        self.include_metadata = include_metadata
        self.include_prev_next_rel = include_prev_next_rel
        self.id_func = id_func
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self._parsers: Dict[str, NodeParser] = {}
        self._reported: set = set()

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_") and "_parsers" in self.__dict__:
            self._parsers.clear()  # they were built from the old configuration

    def to_config(self) -> Dict[str, Any]:
        """Everything that decides this router's nodes (the ingestion cache key and the document
        fingerprints depend on it, so changing any of it re-chunks)."""
        tok = self.tokenizer
        if tok is None:
            from ragloom.settings import Settings

            tok = Settings.tokenizer
        else:
            from ragloom.tokenizers import get_tokenizer

            tok = get_tokenizer(tok)
        return {
            "class_name": self.class_name(),
            "formats": list(self.formats),
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "tokenizer": tok.name,
            "code_chunk_lines": self.code_chunk_lines,
            "code_chunk_lines_overlap": self.code_chunk_lines_overlap,
            "code_max_chars": self.code_max_chars,
            "line_numbers": self.line_numbers,
            "html_tags": self.html_tags,
            "include_metadata": self.include_metadata,
            "include_prev_next_rel": self.include_prev_next_rel,
        }

    def _common(self) -> Dict[str, Any]:
        return dict(
            tokenizer=self.tokenizer,
            include_metadata=self.include_metadata,
            include_prev_next_rel=self.include_prev_next_rel,
            id_func=self.id_func,
        )

    def _text_parser(self) -> NodeParser:
        p = self._parsers.get("text")
        if p is None:
            from ragloom.node_parser.text.sentence import SentenceSplitter

            p = self._parsers["text"] = SentenceSplitter(
                chunk_size=self.chunk_size, chunk_overlap=self.chunk_overlap, **self._common()
            )
        return p

    def parser_for(self, ext: str) -> NodeParser:
        """The parser used for files with extension ``ext`` (``".py"``).

        Code files get the sentence splitter (and a logged warning) when tree-sitter (the
        ``code`` extra) or the language's grammar is not installed.

        Raises:
            ValueError: this router's configuration is invalid for the parser it builds.
        """
        ext = ext.lower()
        if ext and not ext.startswith("."):
            ext = "." + ext
        if "code" in self.formats:
            from ragloom.node_parser.code.languages import language_for_extension

            lang = language_for_extension(ext)
            if lang is not None:
                key = "code:" + lang
                p = self._parsers.get(key)
                if p is None:
                    from ragloom.node_parser.code.code import CodeSplitter

                    cs = CodeSplitter(
                        language=lang,
                        chunk_lines=self.code_chunk_lines,
                        chunk_lines_overlap=self.code_chunk_lines_overlap,
                        max_chars=self.code_max_chars,
                        chunk_size=self.chunk_size,
                        line_numbers=self.line_numbers,
                        **self._common(),
                    )
                    p = cs if cs.available else self._code_fallback(ext, lang, cs.unavailable_reason)
                    self._parsers[key] = p
                return p
        fmt = FORMAT_EXTENSIONS.get(ext)
        if fmt is not None and fmt in self.formats:
            p = self._parsers.get(fmt)
            if p is None:
                if fmt == "markdown":
                    from ragloom.node_parser.file.markdown import MarkdownNodeParser

                    p = MarkdownNodeParser(chunk_size=self.chunk_size, **self._common())
                elif fmt == "html":
                    from ragloom.node_parser.file.html import HTMLNodeParser

                    p = HTMLNodeParser(tags=self.html_tags, chunk_size=self.chunk_size, **self._common())
                else:
                    from ragloom.node_parser.file.json import JSONNodeParser

                    p = JSONNodeParser(chunk_size=self.chunk_size, **self._common())
                self._parsers[fmt] = p
            return p
        return self._text_parser()

    def _code_fallback(self, ext: str, lang: str, reason: Optional[Exception]) -> NodeParser:
        """The sentence splitter for code that tree-sitter cannot parse here; warns once per cause."""
        name = self.class_name()
        if isinstance(reason, MissingDependencyError):  # one warning for every code file
            if "code:missing-dependency" not in self._reported:
                self._reported.add("code:missing-dependency")
                logger.warning("%s: code files are split as plain text (sentence splitting): %s", name, reason)
        elif "code:" + lang not in self._reported:
            self._reported.add("code:" + lang)
            logger.warning(
                "%s: no tree-sitter grammar for %s files (%s): %s; using sentence splitting", name, ext, lang, reason
            )
        return self._text_parser()

    def get_nodes_from_documents(
        self, documents: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> List[BaseNode]:
        """The nodes of every document, each split by :meth:`parser_for` its extension.

        Raises:
            ValueError: a document's embedded metadata leave no room within ``chunk_size``.
        """
        out: List[BaseNode] = []
        docs = list(documents)
        if show_progress:
            from tqdm.auto import tqdm

            docs = tqdm(docs, desc="Parsing nodes")
        # one call per parser (a splitter tokenizes its documents in batches), then document order
        groups: Dict[int, List[BaseNode]] = {}
        parsers: Dict[int, NodeParser] = {}
        for doc in docs:
            parser = self.parser_for(extension_of(doc))
            parsers[id(parser)] = parser
            groups.setdefault(id(parser), []).append(doc)
        by_doc: Dict[str, List[BaseNode]] = {}
        for key, group in groups.items():
            for node in parsers[key].get_nodes_from_documents(group):
                by_doc.setdefault(node.ref_doc_id or "", []).append(node)
        seen: set = set()
        for doc in docs:
            if doc.id_ not in seen:
                seen.add(doc.id_)
                out.extend(by_doc.get(doc.id_, []))
        return out


class CodeTextRouter(SimpleFileNodeParser):
    """Code files to :class:`CodeSplitter`, everything else to sentence splitting
    (LEANN's ``create_text_chunks`` idea); same arguments as :class:`SimpleFileNodeParser`."""

    formats = ("code",)
