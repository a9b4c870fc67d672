"""Shared by the routing / sub-question / HyDE / rerank tests: two real indexes (bundled embedding
model, SQLite store on disk) over the example documents, an ``OpenAILike`` client for the
recording server, and a classifier of the prompts ragloom sends."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict

from ragloom import SimpleDirectoryReader, StorageContext, VectorStoreIndex
from ragloom.llms.openai_like import OpenAILike

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"
TEA_FILE = "brewing_green_tea.md"
TIRE_FILE = "fixing_a_flat_tire.md"
TEA_DESCRIPTION = "How to brew green tea: water temperature, amount of leaves, steeping time, storage."
TIRE_DESCRIPTION = "How to repair a flat bicycle tire: tire levers, inner tube, patch kit, inflating."


def build_index(file_name: str, persist_dir: Path) -> VectorStoreIndex:
    docs = SimpleDirectoryReader(input_files=[str(EXAMPLES / file_name)]).load_data()
    storage = StorageContext.from_defaults(persist_dir=persist_dir, create_if_missing=True)
    return VectorStoreIndex.from_documents(docs, storage_context=storage)


def two_indexes(tmp_path_factory: Any) -> Dict[str, VectorStoreIndex]:
    return {
        "tea": build_index(TEA_FILE, tmp_path_factory.mktemp("tea")),
        "tires": build_index(TIRE_FILE, tmp_path_factory.mktemp("tires")),
    }


def llm_for(srv: Any, context_window: int = 3900) -> OpenAILike:
    return OpenAILike(model="m", api_base=srv.url, api_key="unused", context_window=context_window, max_tokens=128)


def kind(prompt: str) -> str:
    """Which ragloom prompt this is: selector, sub_question, qa, summarize, hyde, rerank or other."""
    if "numbered options below" in prompt:
        return "selector"
    if "break a question into simpler questions" in prompt:
        return "sub_question"
    if prompt.startswith("Answer the question using only the passages"):
        return "qa"
    if "passages from one or more sources" in prompt:
        return "summarize"
    if prompt.startswith("Write one passage"):
        return "hyde"
    if "Below are numbered documents" in prompt:
        return "rerank"
    return "other"


def source_files(response_or_nodes: Any) -> set:
    nodes = getattr(response_or_nodes, "source_nodes", response_or_nodes)
    return {os.path.basename(n.node.metadata.get("file_path", "")) for n in nodes}
