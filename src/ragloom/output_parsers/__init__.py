"""Reading structured answers out of LLM text (LlamaIndex ``llama_index.core.output_parsers`` names)."""

from ragloom.output_parsers.utils import OutputParserException, parse_json_markdown

__all__ = ["OutputParserException", "parse_json_markdown"]
