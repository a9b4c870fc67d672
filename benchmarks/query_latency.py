"""Cold ``ragloom query`` latency: the ONNX Runtime query path against the old torch one.

Given an existing index (``ragloom index PATH --index-dir DIR``), each measurement is the wall time
of a new Python process, as a user waits for it (interpreter start, imports, model load, query
embedding, search, JSON printed):

* ``onnx``: ``python -m ragloom.cli query TEXT --index-dir DIR --json -k K`` — the CLI as shipped
  (``HuggingFaceEmbedding`` ``backend="auto"``: ONNX Runtime on the CPU, no torch import);
* ``torch``: the same CLI command run by a small ``python -c`` program that first makes every
  fp32 ``HuggingFaceEmbedding`` use ``backend="torch"`` (sentence-transformers on torch, the path
  of ``ragloom query`` before the ONNX backend); nothing else differs.  The program reports the
  backend its models used and the run fails unless it is ``torch``;
* ``onnx-repeat``: the ONNX command again with the text of the ``onnx`` run just before it: the
  query vector is then in the index folder's query cache (``embed_cache.sqlite``), so this is the
  cost of a repeated query.

Query vectors are cached per index folder (for either backend, fp32 vectors being the same), so
every cold run gets a text of its own: the base query plus `` (q<nonce><n>)``, the nonce random per
invocation.  Two base queries: English (``--en``) and Chinese (``--zh``).  With the bundled
English-only model a mostly-Chinese hybrid query is answered by BM25 alone and embeds nothing, so
its time is start-up and search only (the table says which queries embed).

Each path runs once untimed first (ONNX export into the user cache if missing, disk cache warm),
then ``--runs`` rounds (default 5) alternate the paths, the order swapped each round; p50 (median)
per path and query is reported.  Then one extra English run of each path with ``python -X
importtime`` tells whether the process imported ``torch`` / ``transformers`` /
``sentence_transformers`` (a line of the import-time log naming the module) — not timed.

Prints a table and one JSON line; writes ``query_latency.txt`` and ``query_latency.json`` to
``--results-dir`` (default ``benchmarks/results``; ``-`` writes nothing).

    python benchmarks/query_latency.py --index-dir DIR [--runs 5] [-k 5] [--en TEXT] [--zh TEXT]
        [--results-dir benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent

DEFAULT_EN = "How do I declare a path parameter?"
DEFAULT_ZH = "如何声明路径参数？"
HEAVY_MODULES = ("torch", "transformers", "sentence_transformers")
BACKENDS_TAG = "ragloom-bench backends:"

#: ``ragloom query`` with every fp32 HuggingFaceEmbedding forced onto the torch backend.
#: argv: TEXT INDEX_DIR K
TORCH_PROGRAM = f"""
import atexit, sys
import ragloom.embeddings.huggingface as _hf
_init = _hf.HuggingFaceEmbedding.__init__
_made = []
def _torch_init(self, *args, **kwargs):
    if not kwargs.get("quantize"):
        kwargs["backend"] = "torch"
    _init(self, *args, **kwargs)
    _made.append(self)
_hf.HuggingFaceEmbedding.__init__ = _torch_init
atexit.register(lambda: print({BACKENDS_TAG!r}, ",".join(m.backend for m in _made), file=sys.stderr))
from ragloom.cli.main import main
main(["query", sys.argv[1], "--index-dir", sys.argv[2], "--json", "-k", sys.argv[3]])
"""


def _env() -> Dict[str, str]:
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")


def command(path: str, text: str, index_dir: Path, k: int, importtime: bool = False) -> List[str]:
    head = [sys.executable] + (["-X", "importtime"] if importtime else [])
    if path == "torch":
        return head + ["-c", TORCH_PROGRAM, text, str(index_dir), str(k)]
    return head + ["-m", "ragloom.cli", "query", text, "--index-dir", str(index_dir), "--json", "-k", str(k)]


def run_query(path: str, text: str, index_dir: Path, k: int, importtime: bool = False) -> Dict[str, Any]:
    """One fresh process; its wall seconds, the CLI's own ``seconds``, results and stderr."""
    cmd = command(path, text, index_dir, k, importtime)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{path} query failed (rc {res.returncode}):\n{res.stderr[-3000:]}")
    try:
        out = json.loads(res.stdout)
    except ValueError:
        raise SystemExit(f"{path} query printed no JSON:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}") from None
    if path == "torch":
        used = [line.split(BACKENDS_TAG, 1)[1].split() for line in res.stderr.splitlines() if BACKENDS_TAG in line]
        backends = ",".join(used[-1]) if used else ""
        if "torch" not in backends.split(",") or "onnx" in backends.split(","):
            raise SystemExit(f"the torch path ran with backends {backends!r}, not torch:\n{res.stderr[-2000:]}")
    results = out.get("results") or []
    return {"wall": wall, "cli_seconds": out.get("seconds"), "n_results": len(results),
            "top1": results[0].get("source") if results else None, "stderr": res.stderr}


def imported_modules(stderr: str) -> List[str]:
    """Module names of a ``-X importtime`` log (``import time: self | cumulative | name``)."""
    names = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                names.append(name)
    return names


def p50(values: List[float]) -> Optional[float]:
    return round(statistics.median(values), 3) if values else None


def _load() -> List[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on this platform
        return []


def main() -> None:  # noqa: C901 - one linear script: warm up, alternate, report
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index-dir", type=Path, required=True, help="an existing ragloom index (ragloom index)")
    ap.add_argument("--runs", type=int, default=5, help="cold runs per path and query (p50 reported)")
    ap.add_argument("-k", "--top-k", type=int, default=5, dest="k")
    ap.add_argument("--en", default=DEFAULT_EN, help="the English base query")
    ap.add_argument("--zh", default=DEFAULT_ZH, help="the Chinese base query")
    ap.add_argument("--results-dir", default=str(HERE / "results"),
                    help="write query_latency.txt/.json here ('-': nowhere)")
    args = ap.parse_args()
    if args.runs < 1 or args.k < 1:
        ap.error("--runs >= 1, -k >= 1")
    index_dir = args.index_dir.resolve()
    if not (index_dir / "ragloom.sqlite").exists():
        ap.error(f"no ragloom index in {index_dir}: run 'ragloom index PATH --index-dir {args.index_dir}' first")

    from ragloom.analysis import is_mostly_cjk

    lines: List[str] = []

    def say(line: str = "") -> None:
        lines.append(line)
        print(line, flush=True)

    load_start = _load()
    nonce = secrets.token_hex(3)
    counter = 0

    def fresh(base: str) -> str:
        nonlocal counter
        counter += 1
        return f"{base} (q{nonce}{counter})"

    queries = {"en": args.en, "zh": args.zh}
    # as the retriever decides for the bundled English-only model in hybrid mode
    embeds = {lang: not is_mostly_cjk(f"{text} (q{nonce}1)") for lang, text in queries.items()}
    paths = ["onnx", "torch"]

    # untimed warm-up: the ONNX export (if not cached) and the disk cache must not count
    warm: Dict[str, float] = {}
    for path in paths:
        warm[path] = round(run_query(path, fresh(args.en), index_dir, args.k)["wall"], 2)
    print(f"warm-up (untimed), wall s: {warm}", file=sys.stderr)

    rows: Dict[str, Dict[str, List[Dict[str, Any]]]] = {
        lang: {p: [] for p in ("onnx", "onnx-repeat", "torch")} for lang in queries
    }
    for r in range(args.runs):
        order = paths if r % 2 == 0 else paths[::-1]
        for lang, base in queries.items():
            for path in order:
                text = fresh(base)
                rows[lang][path].append(run_query(path, text, index_dir, args.k))
                if path == "onnx":  # the same text again: its query vector is now cached
                    rows[lang]["onnx-repeat"].append(run_query(path, text, index_dir, args.k))
        print(f"round {r + 1}: " + "  ".join(
            f"{lang} {p} {rows[lang][p][-1]['wall']:.2f}s" for lang in queries for p in rows[lang]), file=sys.stderr)

    # one extra English run per path under -X importtime (not timed): which heavy modules load
    imports: Dict[str, Dict[str, bool]] = {}
    for path in paths:
        mods = set(imported_modules(run_query(path, fresh(args.en), index_dir, args.k, importtime=True)["stderr"]))
        imports[path] = {m: m in mods for m in (*HEAVY_MODULES, "onnxruntime")}

    def walls(lang: str, path: str) -> List[float]:
        return [round(x["wall"], 3) for x in rows[lang][path]]

    table = {lang: {p: p50(walls(lang, p)) for p in rows[lang]} for lang in queries}
    cli_p50 = {lang: {p: p50([x["cli_seconds"] for x in rows[lang][p] if x["cli_seconds"] is not None])
                      for p in rows[lang]} for lang in queries}
    size = sum(f.stat().st_size for f in index_dir.iterdir() if f.is_file())

    say(f"cold 'ragloom query' (a new process each run, wall s, p50 of {args.runs}, paths alternating), "
        f"index {index_dir} ({size / 1e6:.1f} MB), k {args.k}, hybrid; load average at start {load_start}")
    say(f"{'path':<14}" + "".join(f"{lang + ' p50 s':>11}{'(cli s)':>9}" for lang in queries) + "  torch imported")
    for p in ("onnx", "onnx-repeat", "torch"):
        base = "onnx" if p == "onnx-repeat" else p
        say(f"{p:<14}" + "".join(f"{table[lang][p]:>11.3f}{(cli_p50[lang][p] or 0):>9.3f}" for lang in queries)
            + f"  {'yes' if imports[base]['torch'] else 'no'}")
    ratio = {lang: (round(table[lang]["torch"] / table[lang]["onnx"], 2) if table[lang]["onnx"] else None)
             for lang in queries}
    say(f"{'torch / onnx':<14}" + "".join(f"{ratio[lang]:>10.2f}x{'':>9}" for lang in queries))
    say("(cli s: the 'seconds' the CLI prints, from its query command's start: interpreter start and CLI imports "
        "left out; the torch path imports ragloom.embeddings before the CLI, so its cli s leaves that out too — "
        "compare the wall times)")
    for lang, base in queries.items():
        say(f"{lang}: {base!r} + ' (q<nonce><n>)'; embeds the query: {'yes' if embeds[lang] else 'no (BM25 only)'}; "
            f"runs onnx {walls(lang, 'onnx')}, repeat {walls(lang, 'onnx-repeat')}, torch {walls(lang, 'torch')}")
    for path in paths:
        say(f"-X importtime, {path} path (English query): "
            + ", ".join(f"{m} {'imported' if v else 'not imported'}" for m, v in imports[path].items()))
    top1 = {p: sorted({x["top1"] for lang in queries for x in rows[lang][p] if lang == "en"} - {None})
            for p in ("onnx", "torch")}
    say(f"English top-1 sources: onnx {top1['onnx']}, torch {top1['torch']}; warm-up (untimed) wall s {warm}")

    cmdline = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, HERE.parent), *sys.argv[1:]])
    record = {
        "benchmark": "query_latency", "index_dir": str(index_dir), "index_bytes": size, "runs": args.runs,
        "k": args.k, "mode": "hybrid", "queries": queries, "query_embeds": embeds,
        "onnx_en_p50_s": table["en"]["onnx"], "torch_en_p50_s": table["en"]["torch"],
        "onnx_repeat_en_p50_s": table["en"]["onnx-repeat"],
        "onnx_zh_p50_s": table["zh"]["onnx"], "torch_zh_p50_s": table["zh"]["torch"],
        "onnx_repeat_zh_p50_s": table["zh"]["onnx-repeat"],
        "torch_over_onnx_en": ratio["en"], "torch_over_onnx_zh": ratio["zh"],
        "onnx_imports_torch": imports["onnx"]["torch"], "onnx_imports": imports["onnx"],
        "torch_path_imports": imports["torch"],
        "p50_s": table, "cli_seconds_p50": cli_p50,
        "walls_s": {lang: {p: walls(lang, p) for p in rows[lang]} for lang in queries},
        "n_results": {lang: {p: [x["n_results"] for x in rows[lang][p]] for p in rows[lang]} for lang in queries},
        "top1_en": top1, "warmup_wall_s": warm,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg_at_start": load_start},
        "command": cmdline,
    }
    print(json.dumps(record, ensure_ascii=False))
    if args.results_dir != "-":
        out = Path(args.results_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "query_latency.json").write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n",
                                                encoding="utf-8")
        (out / "query_latency.txt").write_text(f"$ {cmdline}\n" + "\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
