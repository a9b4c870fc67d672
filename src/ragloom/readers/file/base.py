"""``llama_index.core.readers.file.base``: :class:`SimpleDirectoryReader` (defined in
:mod:`ragloom.readers.directory`)."""

from __future__ import annotations

from ragloom.readers.directory import SimpleDirectoryReader, default_file_metadata_func

__all__ = ["SimpleDirectoryReader", "default_file_metadata_func"]
