"""A LlamaIndex program, unchanged: Summary, Vector and Keyword indexes over one folder, routed by an LLM.

Run with LlamaIndex as written, or with ragloom after changing the imports (``llama_index.core`` ->
``ragloom``, ``llama_index.X`` -> ``ragloom.X``; ``tests/test_llamaindex_programs.py`` does exactly
that).  The LLM is OpenAI's API or any server speaking it ($OPENAI_API_BASE, $OPENAI_API_KEY).

    python router.py FOLDER "QUESTION"
"""

import sys

from llama_index.core import (
    Settings,
    SimpleDirectoryReader,
    SimpleKeywordTableIndex,
    StorageContext,
    SummaryIndex,
    VectorStoreIndex,
)
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.selectors import LLMSingleSelector
from llama_index.core.tools import QueryEngineTool
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
from llama_index.llms.openai import OpenAI

Settings.llm = OpenAI(model="gpt-4o-mini")
Settings.embed_model = HuggingFaceEmbedding(model_name="sentence-transformers/all-MiniLM-L6-v2")

documents = SimpleDirectoryReader(sys.argv[1]).load_data()
nodes = SentenceSplitter(chunk_size=256).get_nodes_from_documents(documents)

storage_context = StorageContext.from_defaults()
storage_context.docstore.add_documents(nodes)

summary_index = SummaryIndex(nodes, storage_context=storage_context)
vector_index = VectorStoreIndex(nodes, storage_context=storage_context)
keyword_index = SimpleKeywordTableIndex(nodes, storage_context=storage_context)

summary_tool = QueryEngineTool.from_defaults(
    query_engine=summary_index.as_query_engine(response_mode="tree_summarize", use_async=True),
    description="Useful for summarization questions about the documents",
)
vector_tool = QueryEngineTool.from_defaults(
    query_engine=vector_index.as_query_engine(),
    description="Useful for retrieving specific context from the documents",
)
keyword_tool = QueryEngineTool.from_defaults(
    query_engine=keyword_index.as_query_engine(),
    description="Useful for retrieving specific context using exact keywords",
)

query_engine = RouterQueryEngine(
    selector=LLMSingleSelector.from_defaults(),
    query_engine_tools=[summary_tool, vector_tool, keyword_tool],
)
response = query_engine.query(sys.argv[2])
print(str(response))
for source in response.source_nodes:
    print("source:", source.node.node_id, source.node.get_content()[:60].replace("\n", " "))
