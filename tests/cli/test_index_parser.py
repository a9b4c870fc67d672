"""``ragloom index --parser``: a real CLI run over a few Markdown pages, a code file and a text file
routes each file to its parser (issue 10, item 10), keeps the offsets contract, and switching the
parser re-chunks."""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragloom.cli import cli
from ragloom.ingestion.paths import DEFAULT_PARSER, open_index

PAGES = {
    "path-params.md": """# Path Parameters

You can declare path "parameters" or "variables" with the same syntax used by Python format strings:

```Python
from fastapi import FastAPI

app = FastAPI()


@app.get("/items/{item_id}")
async def read_item(item_id):
    # not a header: this line is code
    return {"item_id": item_id}
```

The value of the path parameter `item_id` will be passed to your function as the argument `item_id`.

## Path parameters with types

You can declare the type of a path parameter in the function, using standard Python type annotations.

### Data conversion

If you run this example and open your browser, the value is converted to an `int`.
""",
    "query-params.md": """# Query Parameters

When you declare other function parameters that are not part of the path parameters, they are
automatically interpreted as "query" parameters.

## Defaults

As query parameters are not a fixed part of a path, they can be optional and can have default values.

## Required query parameters

To make a query parameter required, you can just not declare any default value.
""",
    "body.md": """# Request Body

When you need to send data from a client to your API, you send it as a **request body**.

## Create your data model

Declare your data model as a class that inherits from `BaseModel`, using standard Python types for all
the attributes.

## Use the model

Inside of the function, you can access all the attributes of the model object directly.
""",
}

CODE = '''"""A tiny app."""


def read_item(item_id: int) -> dict:
    """Return the item."""
    return {"item_id": item_id}


class Store:
    def __init__(self) -> None:
        self.items = {}

    def add(self, key, value):
        self.items[key] = value
        return value
'''

TEXT = "Plain notes. The water should be hot but not boiling.\n\nSteep the leaves for three minutes.\n"


@pytest.fixture()
def corpus(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in PAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "app.py").write_text(CODE, encoding="utf-8")
    (root / "notes.txt").write_text(TEXT, encoding="utf-8")
    return root


def _index(index_dir: Path, corpus: Path, *extra: str) -> dict:
    res = CliRunner().invoke(cli, ["index", str(corpus), "--index-dir", str(index_dir), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _nodes_by_file(index_dir: Path) -> dict:
    index = open_index(index_dir, create=False)
    out: dict = {}
    for node in index.vector_store.get_nodes():
        out.setdefault(os.path.basename(node.metadata["file_path"]), []).append(node)
    return out


def _check_offsets(corpus: Path, by_file: dict) -> None:
    for name, nodes in by_file.items():
        text = (corpus / name).read_text(encoding="utf-8")
        for node in nodes:
            assert text[node.start_char_idx : node.end_char_idx] == node.text, (name, node.metadata)


@pytest.mark.requires_extra("code")
def test_index_parser_auto_routes_by_file_type(tmp_path, corpus):
    index_dir = tmp_path / "idx"
    s = _index(index_dir, corpus, "--parser", "auto")
    assert s["parser"] == "auto" and s["files_read"] == 5 and not s["skipped"]
    by_file = _nodes_by_file(index_dir)
    assert set(by_file) == {*PAGES, "app.py", "notes.txt"}
    _check_offsets(corpus, by_file)

    # Markdown: one node per header section, each with its header path; a '#' line in code is not a header
    for name in PAGES:
        assert all("header_path" in n.metadata for n in by_file[name]), name
    paths = [n.metadata["header_path_list"] for n in by_file["path-params.md"]]
    assert ["Path Parameters"] in paths
    assert ["Path Parameters", "Path parameters with types", "Data conversion"] in paths
    assert not any("not a header" in " ".join(p) for p in paths)
    fenced = next(n for n in by_file["path-params.md"] if n.metadata["header_path_list"] == ["Path Parameters"])
    assert "# not a header: this line is code" in fenced.text
    # code: CodeSplitter nodes carry their line range
    for n in by_file["app.py"]:
        assert 1 <= n.metadata["start_line"] <= n.metadata["end_line"] <= CODE.count("\n") + 1
    # anything else: sentence splitting, no format metadata
    for n in by_file["notes.txt"]:
        assert "header_path" not in n.metadata and "start_line" not in n.metadata

    # the routed nodes answer the question of issue 10 item 10 from the right page
    res = CliRunner().invoke(
        cli, ["query", "How do I declare a path parameter?", "-k", "3", "--index-dir", str(index_dir), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert os.path.basename(json.loads(res.stdout)["results"][0]["file_path"]) == "path-params.md"

    # switching the parser re-chunks every file: sentence nodes carry no format metadata
    s2 = _index(index_dir, corpus, "--parser", "sentence")
    assert s2["parser"] == "sentence" and s2["documents"]["updated"] == 5
    by_file = _nodes_by_file(index_dir)
    _check_offsets(corpus, by_file)
    assert not any("header_path" in n.metadata or "start_line" in n.metadata for ns in by_file.values() for n in ns)


def test_index_default_parser(tmp_path, corpus):
    index_dir = tmp_path / "idx"
    s = _index(index_dir, corpus)
    assert s["parser"] == DEFAULT_PARSER
    by_file = _nodes_by_file(index_dir)
    _check_offsets(corpus, by_file)
    routed = all("header_path" in n.metadata for name in PAGES for n in by_file[name])
    assert routed == (DEFAULT_PARSER == "auto")
