"""``llama_index.core.readers.json`` and ``llama_index.readers.json``: :class:`JSONReader`
(defined in :mod:`ragloom.readers.json_reader`).

Differences from LlamaIndex's ``JSONReader``: it takes ``is_jsonl`` (``None``, the default,
decides by extension), ``encoding`` and ``errors``; LlamaIndex's ``levels_back``,
``collapse_length``, ``ensure_ascii`` and ``clean_json`` are not taken (``TypeError``): a JSON
file becomes one document of readable ``key: value`` lines, a JSON Lines file one document
per record.
"""

from __future__ import annotations

from ragloom.readers.json_reader import JSONReader

__all__ = ["JSONReader"]
