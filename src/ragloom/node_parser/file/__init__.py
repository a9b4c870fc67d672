"""Format-aware node parsers: Markdown, HTML, JSON, and routing by file type."""

from ragloom.node_parser.file.html import HTMLNodeParser
from ragloom.node_parser.file.json import JSONNodeParser
from ragloom.node_parser.file.markdown import MarkdownNodeParser
from ragloom.node_parser.file.simple_file import CodeTextRouter, SimpleFileNodeParser

__all__ = ["HTMLNodeParser", "JSONNodeParser", "MarkdownNodeParser", "SimpleFileNodeParser", "CodeTextRouter"]
