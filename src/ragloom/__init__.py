"""ragloom: load files → split into nodes → embed → store → retrieve, offline by default.

The public names mirror ``llama_index.core``; they are imported lazily so that
``import ragloom`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # schema
    "BaseNode": "ragloom.schema",
    "TextNode": "ragloom.schema",
    "Document": "ragloom.schema",
    "NodeRelationship": "ragloom.schema",
    "RelatedNodeInfo": "ragloom.schema",
    "MetadataMode": "ragloom.schema",
    "NodeWithScore": "ragloom.schema",
    "QueryBundle": "ragloom.schema",
    "TransformComponent": "ragloom.schema",
    # settings, callbacks
    "Settings": "ragloom.settings",
    "CallbackManager": "ragloom.callbacks",
    # readers
    "SimpleDirectoryReader": "ragloom.readers",
    # node parsers
    "SentenceSplitter": "ragloom.node_parser",
    "TokenTextSplitter": "ragloom.node_parser",
    # storage and indices
    "StorageContext": "ragloom.storage",
    "load_index_from_storage": "ragloom.storage",
    "VectorStoreIndex": "ragloom.indices",
    "load_indices_from_storage": "ragloom.storage",
    "SummaryIndex": "ragloom.indices",
    "ListIndex": "ragloom.indices",
    "KeywordTableIndex": "ragloom.indices",
    "SimpleKeywordTableIndex": "ragloom.indices",
    "RAKEKeywordTableIndex": "ragloom.indices",
    "TreeIndex": "ragloom.indices",
    "KnowledgeGraphIndex": "ragloom.indices",
    "PropertyGraphIndex": "ragloom.indices",
    # retrieval: retrievers, postprocessors, IndexNode
    "IndexNode": "ragloom.schema",
    "BM25Retriever": "ragloom.retrievers",
    "QueryFusionRetriever": "ragloom.retrievers",
    "AutoMergingRetriever": "ragloom.retrievers",
    "RecursiveRetriever": "ragloom.retrievers",
    "VectorIndexRetriever": "ragloom.retrievers",
    "SimilarityPostprocessor": "ragloom.postprocessor",
    "SentenceTransformerRerank": "ragloom.postprocessor",
    "LongContextReorder": "ragloom.postprocessor",
    "PrevNextNodePostprocessor": "ragloom.postprocessor",
    "AutoPrevNextNodePostprocessor": "ragloom.postprocessor",
    "KeywordNodePostprocessor": "ragloom.postprocessor",
    # answers: prompts, prompt packing, synthesizers
    "PromptTemplate": "ragloom.prompts",
    "PromptHelper": "ragloom.indices.prompt_helper",
    "get_response_synthesizer": "ragloom.response_synthesizers",
    # ingestion
    "IngestionPipeline": "ragloom.ingestion",
    "IngestionCache": "ragloom.ingestion",
    "DocstoreStrategy": "ragloom.ingestion",
    "IngestionStats": "ragloom.ingestion",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragloom' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
