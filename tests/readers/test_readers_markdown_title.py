from ragloom import SimpleDirectoryReader
from ragloom.readers.markdown import markdown_title
from ragloom.schema import MetadataMode


def test_title_is_first_h1_and_ignores_code_fences():
    assert markdown_title("# Path Parameters { #path-parameters }\n\ntext") == "Path Parameters"
    assert markdown_title("```\n# not a heading\n```\n\nReal title\n==========\n") == "Real title"
    assert markdown_title("intro\n\n## Second *level* `code`\n\n# Top\n") == "Top"
    assert markdown_title("intro\n\n## Only *level* two\n") == "Only level two"
    assert markdown_title("    # indented code is not a heading\n") is None
    assert markdown_title("no heading at all") is None


def test_markdown_documents_carry_their_title_into_embed_and_llm_text(tmp_path):
    (tmp_path / "guide.md").write_text("# Brewing Guide\n\nUse water at 80 °C.\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("# not markdown\n\nplain text\n", encoding="utf-8")
    docs = {d.metadata["file_name"]: d for d in SimpleDirectoryReader(input_dir=str(tmp_path)).load_data()}
    md = docs["guide.md"]
    assert md.metadata["document_title"] == "Brewing Guide"
    assert "document_title: Brewing Guide" in md.get_content(MetadataMode.EMBED)
    assert "document_title: Brewing Guide" in md.get_content(MetadataMode.LLM)
    assert "document_title" not in docs["notes.txt"].metadata
