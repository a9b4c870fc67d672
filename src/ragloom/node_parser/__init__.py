"""Node parsers: turn documents into chunk nodes (LlamaIndex-compatible names)."""

from ragloom.node_parser.interface import MetadataAwareTextSplitter, NodeParser, TextSplitter
from ragloom.node_parser.text import SentenceSplitter, TokenTextSplitter, pack_spans

__all__ = [
    "NodeParser",
    "TextSplitter",
    "MetadataAwareTextSplitter",
    "SentenceSplitter",
    "TokenTextSplitter",
    "pack_spans",
]
