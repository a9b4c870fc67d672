"""Node parsers: turn documents into chunk nodes (LlamaIndex-compatible names)."""

from ragloom.node_parser.interface import (
    MetadataAwareTextSplitter,
    NodeParser,
    TextSplitter,
)
from ragloom.node_parser.text import SentenceSplitter, TokenTextSplitter, pack_spans

#: LlamaIndex's older name of :class:`SentenceSplitter` (``SimpleNodeParser.from_defaults(chunk_size=...)``)
SimpleNodeParser = SentenceSplitter

__all__ = [
    "NodeParser",
    "TextSplitter",
    "MetadataAwareTextSplitter",
    "SentenceSplitter",
    "SimpleNodeParser",
    "TokenTextSplitter",
    "pack_spans",
]

# Sentence-window, semantic and hierarchical parsers; split helpers (issue 3).
from ragloom.node_parser.relational import (  # noqa: E402
    HierarchicalNodeParser,
    get_child_nodes,
    get_deeper_nodes,
    get_leaf_nodes,
    get_root_nodes,
)
from ragloom.node_parser.text.semantic import SemanticSplitterNodeParser  # noqa: E402
from ragloom.node_parser.text.utils import (  # noqa: E402
    split_by_char,
    split_by_phrase_regex,
    split_by_regex,
    split_by_sentence_tokenizer,
    split_by_sep,
)
from ragloom.node_parser.text.window import SentenceWindowNodeParser  # noqa: E402

__all__ += [
    "SentenceWindowNodeParser",
    "SemanticSplitterNodeParser",
    "HierarchicalNodeParser",
    "get_leaf_nodes",
    "get_root_nodes",
    "get_child_nodes",
    "get_deeper_nodes",
    "split_by_sep",
    "split_by_char",
    "split_by_regex",
    "split_by_phrase_regex",
    "split_by_sentence_tokenizer",
]

# Format-aware parsers, code splitting and routing by file type (issue 3).
from ragloom.node_parser.code import CodeSplitter  # noqa: E402
from ragloom.node_parser.file import (  # noqa: E402
    CodeTextRouter,
    HTMLNodeParser,
    JSONNodeParser,
    MarkdownNodeParser,
    SimpleFileNodeParser,
)

__all__ += [
    "CodeSplitter",
    "CodeTextRouter",
    "HTMLNodeParser",
    "JSONNodeParser",
    "MarkdownNodeParser",
    "SimpleFileNodeParser",
]
