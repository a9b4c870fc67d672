"""Query-time helpers of indices (LlamaIndex ``llama_index.core.indices.query`` path)."""
