"""A LlamaIndex program, unchanged: an ``IngestionPipeline`` with Title and QuestionsAnswered extractors,
a docstore and a Chroma vector store, run twice (the second run finds nothing to do).

The LLM is OpenAI's API or any server speaking it ($OPENAI_API_BASE, $OPENAI_API_KEY).

    python pipeline.py FOLDER CHROMA_DIR "QUESTION"
"""

import sys

import chromadb
from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.extractors import QuestionsAnsweredExtractor, TitleExtractor
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
from llama_index.llms.openai import OpenAI
from llama_index.vector_stores.chroma import ChromaVectorStore

llm = OpenAI(model="gpt-4o-mini")
embed_model = HuggingFaceEmbedding(model_name="sentence-transformers/all-MiniLM-L6-v2")

client = chromadb.PersistentClient(path=sys.argv[2])
collection = client.get_or_create_collection("docs")
vector_store = ChromaVectorStore(chroma_collection=collection)

pipeline = IngestionPipeline(
    transformations=[
        SentenceSplitter(chunk_size=200, chunk_overlap=20),
        TitleExtractor(llm=llm, nodes=5),
        QuestionsAnsweredExtractor(llm=llm, questions=3),
        embed_model,
    ],
    docstore=SimpleDocumentStore(),
    vector_store=vector_store,
    docstore_strategy=DocstoreStrategy.UPSERTS,
)

documents = SimpleDirectoryReader(sys.argv[1], filename_as_id=True).load_data()
nodes = pipeline.run(documents=documents)
print(f"first run: {len(nodes)} nodes")
for node in nodes[:2]:
    print("title:", node.metadata.get("document_title"))
    print("questions:", node.metadata.get("questions_this_excerpt_can_answer"))
nodes = pipeline.run(documents=documents)
print(f"second run: {len(nodes)} nodes")

index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed_model)
for hit in index.as_retriever(similarity_top_k=2).retrieve(sys.argv[3]):
    print("hit:", round(hit.score or 0.0, 3), hit.node.get_content()[:60].replace("\n", " "))
