"""Golden snapshots of chunk spans and node ids.

A node id is derived from the document id, the chunk's position and span, the chunk text
and the parser's config digest; an index re-embeds every node whose id changes.  These
tests freeze, for a fixed grid of inputs and parser settings, the list of
``(node.id_, start_char_idx, end_char_idx)`` each parser produces today, so that a change
to the chunkers that would make existing user indexes re-embed is noticed.

Each case records the number of nodes, a sha256 over the whole list (see :func:`digest`)
and its first three tuples (for readable diffs).  The snapshots live in
``golden/snapshots.json``.  The test only compares; to accept a *meant* change, run::

    python tests/node_parser/test_golden_snapshots.py --regenerate

which rewrites the JSON and prints the cases that changed, then list the change in the
README changelog.

Inputs are fixed byte ranges of fixed files under ``../shared/data`` (a case skips when
its file is missing) plus one inline English/Chinese string.  Every parser gets
``chunk_size``, ``chunk_overlap`` and ``tokenizer`` explicitly, so a change of defaults
does not show up here, only a change of behaviour.
"""

from __future__ import annotations

import hashlib
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import pytest

HERE = Path(__file__).resolve().parent
SNAPSHOT_FILE = HERE / "golden" / "snapshots.json"
DATA = HERE.parents[2] / "shared" / "data"  # <repo>/../shared/data
REGEN_CMD = "python tests/node_parser/test_golden_snapshots.py --regenerate"
FORMAT = 1

# -- inputs --------------------------------------------------------------------------------

_MIXED_PARAGRAPH = """\
## Part {i}: 混合文本 / mixed text

RAG pipelines split documents into chunks before embedding them. 检索增强生成（RAG）会先把文档切成块，再计算向量。\
Dr. Smith, e.g. in the U.S. edition (p. 42), calls this "chunking"; 中文里常说“分块”。

The tokenizer decides the budget: all-MiniLM-L6-v2 counts 每个汉字 as one token, while cl100k_base \
may use two or three tokens for a rare character such as 曹雪芹 or 賈寶玉. Is that a problem? 不一定！\
It depends on the model — 取决于模型；also on the chunk_size (64, 254 or 1024 tokens).

- 第一条：保持偏移量 start_char_idx / end_char_idx 精确。
- Item two: node ids must not change unless a change is meant.
- 第三条：`SentenceSplitter` 与 `TokenTextSplitter` 的结果都要稳定。

话说天下大势，分久必合，合久必分。Long sentences without punctuation in one language and then the \
other 一句很长的中文句子没有标点符号一直写下去直到超过最小的块大小为止这样才能测试到按字切分的路径 \
and finally some code: `for node in parser.get_nodes_from_documents(docs): print(node.id_)`.
"""


def _mixed_text() -> str:
    return "\n\n".join(_MIXED_PARAGRAPH.format(i=i) for i in range(1, 4))


class Corpus(NamedTuple):
    name: str
    path: Optional[str]  # relative to ../shared/data; None: inline text
    byte_range: Optional[Tuple[int, int]]  # [start, end) before alignment to UTF-8 characters
    doc_id: str
    file_name: str


_MD = "markdown_fastapi/docs/en/docs/"
_EX = "mixed_docs/example-docs/"
CORPORA: Dict[str, Corpus] = {
    c.name: c
    for c in [
        # ~20 KB from the middle of the novel (away from the site boilerplate at head and tail)
        Corpus("zh_hongloumeng", "zh_classics/红楼梦.utf8.txt", (400_000, 420_000), "golden-zh", "hongloumeng.txt"),
        Corpus(
            "md_first_steps", _MD + "tutorial/first-steps.md", (0, 14_155), "golden-md-first-steps", "first-steps.md"
        ),
        Corpus("md_python_types", _MD + "python-types.md", (0, 11_214), "golden-md-python-types", "python-types.md"),
        Corpus("md_features", _MD + "features.md", (0, 9_139), "golden-md-features", "features.md"),
        Corpus("md_async", _MD + "async.md", (0, 16_000), "golden-md-async", "async.md"),
        Corpus("en_norwich", _EX + "norwich-city.txt", (0, 20_000), "golden-en", "norwich-city.txt"),
        Corpus("mixed_en_zh", None, None, "golden-mixed", "mixed.txt"),
        Corpus("html_steeljis", _EX + "example-steelJIS-datasheet.html", (0, 12_184), "golden-html", "datasheet.html"),
        Corpus("json_simple", _EX + "simple.json", (0, 4_447), "golden-json", "simple.json"),
    ]
}


def _aligned_slice(data: bytes, start: int, end: int) -> bytes:
    """``data[start:end]`` moved inward to whole UTF-8 characters (deterministic)."""
    end = min(end, len(data))
    while start < end and 0x80 <= data[start] <= 0xBF:  # continuation byte: skip forward
        start += 1
    while end < len(data) and start < end and 0x80 <= data[end] <= 0xBF:  # end inside a character
        end -= 1
    return data[start:end]


@lru_cache(maxsize=None)
def load_text(corpus_name: str) -> str:
    """The corpus text; ``FileNotFoundError`` when its shared-data file is missing."""
    c = CORPORA[corpus_name]
    if c.path is None:
        return _mixed_text()
    path = DATA / c.path
    if not path.is_file():
        raise FileNotFoundError(str(path))
    a, b = c.byte_range  # type: ignore[misc]
    # bytes, not text mode: no newline translation
    return _aligned_slice(path.read_bytes(), a, b).decode("utf-8")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_document(corpus_name: str) -> Any:
    from ragloom.schema import Document

    c = CORPORA[corpus_name]
    # simple metadata, embedded with each chunk: exercises the metadata-aware budget
    return Document(text=load_text(corpus_name), id_=c.doc_id, metadata={"file_name": c.file_name})


# -- tokenizers ----------------------------------------------------------------------------


def _tok_minilm() -> Any:
    # What Settings.tokenizer gives when no embed model is set: the bundled embed model's
    # tokenizer (all-MiniLM-L6-v2 WordPiece), named "hf:all-MiniLM-L6-v2".
    from ragloom.tokenizers import get_default_tokenizer

    return get_default_tokenizer()


def _tok_cl100k() -> Any:
    from ragloom.tokenizers import get_tokenizer

    return get_tokenizer("cl100k_base")


TOKENIZERS = {"minilm": _tok_minilm, "cl100k": _tok_cl100k}


@lru_cache(maxsize=None)
def get_tok(key: str) -> Any:
    return TOKENIZERS[key]()


# -- parsers -------------------------------------------------------------------------------


def _parser_cls(kind: str) -> Any:
    import ragloom.node_parser as np_

    return {
        "sentence": np_.SentenceSplitter,
        "token": np_.TokenTextSplitter,
        "markdown": np_.MarkdownNodeParser,
        "html": np_.HTMLNodeParser,
        "json": np_.JSONNodeParser,
    }[kind]


MD_CORPORA = ["md_first_steps", "md_python_types", "md_features", "md_async"]
TEXT_CORPORA = ["zh_hongloumeng", *MD_CORPORA, "en_norwich", "mixed_en_zh"]
PARSER_CORPORA = {
    "sentence": TEXT_CORPORA,
    "token": TEXT_CORPORA,
    "markdown": MD_CORPORA,
    "html": ["html_steeljis"],
    "json": ["json_simple"],
}
CHUNK_SIZES = (64, 254, 1024)


class Case(NamedTuple):
    parser: str
    corpus: str
    tokenizer: str
    chunk_size: int
    chunk_overlap: int

    @property
    def id(self) -> str:
        return f"{self.parser}-{self.corpus}-{self.tokenizer}-cs{self.chunk_size}-ov{self.chunk_overlap}"


def all_cases() -> List[Case]:
    out = []
    for parser, corpora in PARSER_CORPORA.items():
        for corpus in corpora:
            for tok in TOKENIZERS:
                for cs in CHUNK_SIZES:
                    for ov in (0, cs // 8):
                        out.append(Case(parser, corpus, tok, cs, ov))
    return out


CASES = all_cases()


def compute_tuples(case: Case) -> List[Tuple[str, Optional[int], Optional[int]]]:
    parser = _parser_cls(case.parser)(
        chunk_size=case.chunk_size, chunk_overlap=case.chunk_overlap, tokenizer=get_tok(case.tokenizer)
    )
    nodes = parser.get_nodes_from_documents([make_document(case.corpus)])
    return [(n.id_, n.start_char_idx, n.end_char_idx) for n in nodes]


def digest(tuples: List[Tuple[str, Optional[int], Optional[int]]]) -> str:
    """sha256 of the compact JSON list ``[[id, start, end], ...]``."""
    blob = json.dumps([list(t) for t in tuples], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def snapshot_of(case: Case) -> Dict[str, Any]:
    tuples = compute_tuples(case)
    return {"n_nodes": len(tuples), "sha256": digest(tuples), "first3": [list(t) for t in tuples[:3]]}


# -- the tests -----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_snapshots() -> Dict[str, Any]:
    if not SNAPSHOT_FILE.is_file():
        pytest.fail(f"{SNAPSHOT_FILE} is missing; create it with `{REGEN_CMD}`", pytrace=False)
    return json.loads(SNAPSHOT_FILE.read_text(encoding="utf-8"))


def _how_to_accept() -> str:
    return (
        "Existing user indexes would re-embed these nodes.  If the change is NOT meant, fix the chunker.  "
        f"If it IS meant, regenerate the snapshots with `{REGEN_CMD}` and list the change (which parsers / "
        "settings re-chunk) in the README changelog."
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_snapshot(case: Case) -> None:
    snaps = load_snapshots()
    try:
        text = load_text(case.corpus)
    except FileNotFoundError as exc:
        pytest.skip(f"shared data file missing for corpus {case.corpus!r}: {exc}")
    corpus_snap = snaps["corpora"].get(case.corpus)
    assert corpus_snap is not None, f"corpus {case.corpus!r} has no entry in {SNAPSHOT_FILE.name}; run `{REGEN_CMD}`"
    if text_sha256(text) != corpus_snap["sha256"]:
        pytest.fail(
            f"[{case.id}] the INPUT changed, not the chunker: corpus {case.corpus!r} "
            f"({CORPORA[case.corpus].path}, bytes {CORPORA[case.corpus].byte_range}) no longer has sha256 "
            f"{corpus_snap['sha256']} ({corpus_snap['chars']} chars); got {text_sha256(text)} ({len(text)} chars). "
            + (
                "Restore the shared data file or pick a new fixed slice and regenerate."
                if CORPORA[case.corpus].path
                else "The inline text in this file was edited: restore it, or regenerate if that was meant."
            ),
            pytrace=False,
        )
    tok_name = get_tok(case.tokenizer).name
    want_tok = snaps["tokenizers"][case.tokenizer]
    if tok_name != want_tok:
        pytest.fail(
            f"[{case.id}] tokenizer {case.tokenizer!r} is now named {tok_name!r}, was {want_tok!r}: the name enters "
            f"every node id's config digest, so every node would get a new id. {_how_to_accept()}",
            pytrace=False,
        )
    want = snaps["cases"].get(case.id)
    if want is None:
        pytest.fail(f"[{case.id}] has no golden snapshot; add it with `{REGEN_CMD}`", pytrace=False)
    got = snapshot_of(case)
    if got != want:
        lines = [
            f"Golden snapshot changed for case {case.id}",
            f"  (parser={case.parser}, corpus={case.corpus}, tokenizer={case.tokenizer} [{tok_name}], "
            f"chunk_size={case.chunk_size}, chunk_overlap={case.chunk_overlap})",
            f"  n_nodes: snapshot {want['n_nodes']}, now {got['n_nodes']}",
            f"  sha256:  snapshot {want['sha256']}, now {got['sha256']}",
        ]
        for i in range(max(len(want["first3"]), len(got["first3"]))):
            w = want["first3"][i] if i < len(want["first3"]) else None
            g = got["first3"][i] if i < len(got["first3"]) else None
            mark = "  " if w == g else "!="
            lines.append(f"  node {i}: {mark} snapshot {w}, now {g}")
        lines.append(_how_to_accept())
        pytest.fail("\n".join(lines), pytrace=False)


def test_snapshot_file_has_no_stale_cases() -> None:
    snaps = load_snapshots()
    assert snaps.get("format") == FORMAT
    stale = sorted(set(snaps["cases"]) - {c.id for c in CASES})
    assert not stale, f"{SNAPSHOT_FILE.name} has cases no longer in the grid: {stale[:10]}; run `{REGEN_CMD}`"


# -- the generator -------------------------------------------------------------------------


def _render(doc: Dict[str, Any]) -> str:
    """JSON with one line per corpus and per case (small, readable diffs)."""
    out = ["{"]
    out.append(f'  "format": {json.dumps(doc["format"])},')
    out.append(f'  "note": {json.dumps(doc["note"], ensure_ascii=False)},')
    out.append(f'  "tokenizers": {json.dumps(doc["tokenizers"], sort_keys=True)},')
    for section in ("corpora", "cases"):
        out.append(f'  "{section}": {{')
        items = sorted(doc[section].items())
        for k, (key, val) in enumerate(items):
            comma = "," if k + 1 < len(items) else ""
            out.append(f"    {json.dumps(key)}: {json.dumps(val, ensure_ascii=False, sort_keys=True)}{comma}")
        out.append("  }," if section == "corpora" else "  }")
    out.append("}")
    return "\n".join(out) + "\n"


def generate() -> Dict[str, Any]:
    corpora = {}
    for name, c in sorted(CORPORA.items()):
        text = load_text(name)  # FileNotFoundError: refuse to write a partial snapshot
        corpora[name] = {
            "path": c.path,
            "byte_range": list(c.byte_range) if c.byte_range else None,
            "doc_id": c.doc_id,
            "chars": len(text),
            "sha256": text_sha256(text),
        }
    return {
        "format": FORMAT,
        "note": f"Generated by `{REGEN_CMD}` from the current chunkers; do not edit by hand.",
        "tokenizers": {k: get_tok(k).name for k in TOKENIZERS},
        "corpora": corpora,
        "cases": {c.id: snapshot_of(c) for c in CASES},
    }


def main(argv: List[str]) -> int:
    import argparse
    import logging

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regenerate", action="store_true", help=f"rewrite {SNAPSHOT_FILE}")
    ap.add_argument("--out", type=Path, default=None, help="write here instead of the snapshot file")
    args = ap.parse_args(argv)
    if not args.regenerate:
        ap.error("pass --regenerate (the comparison runs under pytest)")
    logging.basicConfig(level=logging.ERROR)
    try:
        doc = generate()
    except FileNotFoundError as exc:
        print(f"shared data file missing: {exc}; not writing a partial snapshot", file=sys.stderr)
        return 1
    target = args.out or SNAPSHOT_FILE
    old = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {"cases": {}}
    changed = sorted(k for k in doc["cases"] if k in old["cases"] and old["cases"][k] != doc["cases"][k])
    added = sorted(set(doc["cases"]) - set(old["cases"]))
    removed = sorted(set(old["cases"]) - set(doc["cases"]))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_render(doc), encoding="utf-8")
    print(
        f"wrote {target}: {len(doc['cases'])} cases "
        f"({len(changed)} changed, {len(added)} added, {len(removed)} removed)"
    )
    for title, keys in (("changed", changed), ("added", added), ("removed", removed)):
        if title != "changed" and len(keys) > 20:
            print(f"  {title}: {len(keys)} cases ({keys[0]} ... {keys[-1]})")
            continue
        for k in keys:
            print(f"  {title}: {k}")
    if changed or removed:
        print("List the changed cases (which parsers/settings re-chunk) in the README changelog.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
