"""Text splitters built on the span engine."""

from ragloom.node_parser.text.engine import pack_spans
from ragloom.node_parser.text.sentence import SentenceSplitter
from ragloom.node_parser.text.token import TokenTextSplitter

__all__ = ["SentenceSplitter", "TokenTextSplitter", "pack_spans"]
