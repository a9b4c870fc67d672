"""A LlamaIndex program, unchanged: a chat loop with ``condense_plus_context`` over one folder.

Questions come from standard input, one per line; ``reset`` clears the conversation.  The LLM is
OpenAI's API or any server speaking it ($OPENAI_API_BASE, $OPENAI_API_KEY).

    python chat.py FOLDER < questions.txt
"""

import sys

from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
from llama_index.llms.openai import OpenAI

Settings.embed_model = HuggingFaceEmbedding(model_name="sentence-transformers/all-MiniLM-L6-v2")
llm = OpenAI(model="gpt-4o-mini")

documents = SimpleDirectoryReader(sys.argv[1]).load_data()
index = VectorStoreIndex.from_documents(documents)

memory = ChatMemoryBuffer.from_defaults(token_limit=1500)
chat_engine = index.as_chat_engine(
    chat_mode="condense_plus_context",
    memory=memory,
    llm=llm,
    context_prompt=(
        "You are a chatbot, able to have normal interactions, as well as talk about the documents below.\n"
        "Here are the relevant documents for the context:\n"
        "{context_str}\n"
        "Instruction: Use the previous chat history, or the context above, to interact and help the user."
    ),
    verbose=False,
)

for line in sys.stdin:
    question = line.strip()
    if not question:
        continue
    if question == "reset":
        chat_engine.reset()
        print("(conversation reset)")
        continue
    streaming_response = chat_engine.stream_chat(question)
    for token in streaming_response.response_gen:
        print(token, end="")
    print()
    for node in streaming_response.source_nodes:
        print("source:", node.node.metadata.get("file_name"), round(node.score or 0.0, 3))
print("history:", len(chat_engine.chat_history), "messages")
