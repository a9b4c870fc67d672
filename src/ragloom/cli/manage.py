"""``ragloom list``, ``ragloom remove`` and ``ragloom import-llamaindex``: looking after index directories.

Each command reads its arguments, makes one library call (:func:`ragloom.ingestion.manage.list_indexes`,
:func:`ragloom.ingestion.manage.remove_paths`,
:func:`ragloom.storage.llamaindex_import.import_llamaindex_dir`) and prints the result (``--json``:
the library's dict as it is).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import click

__all__ = ["list_cmd", "remove_cmd", "import_llamaindex_cmd", "MANAGE_COMMANDS"]

DEFAULT_INDEX_DIR = "ragloom_index"


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _size(n: Optional[int]) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def _told(index_dir: Path) -> Any:
    def told(pid: Optional[int]) -> None:
        click.echo(f"index {index_dir} is locked by pid {pid if pid is not None else '?'}; waiting (--wait)", err=True)

    return told


@click.command("list")
@click.argument("roots", nargs=-1, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--max-depth", type=click.IntRange(min=0), default=3, show_default=True,
              help="How many folder levels below each ROOT to search (hidden folders and node_modules are skipped).")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_cmd(roots: List[Path], max_depth: int, as_json: bool) -> None:
    """List the ragloom indexes under ROOT... (default: the current folder).

    For each index directory: documents, nodes, embed model, vector store, size on disk and
    when it was last written. Reads no model and contacts no server.
    """
    from ragloom.ingestion.manage import list_indexes

    out = list_indexes(list(roots) or [Path(".")], max_depth=max_depth)
    if as_json:
        _echo_json(out)
        return
    if not out["indexes"]:
        click.echo(f"No ragloom index under {', '.join(out['roots'])} (searched {max_depth} levels down).")
        return
    for ix in out["indexes"]:
        click.secho(ix["index_dir"], bold=True)
        if ix["error"]:
            click.secho(f"  unreadable: {ix['error']}", fg="yellow")
            continue
        model = ix["embed_model"] or "-"
        if ix["quantize"]:
            model += f" ({ix['quantize']})"
        click.echo(f"  documents {ix['documents']}  nodes {ix['nodes']}  embed model {model}"
                   + (f", {ix['dimension']} dims" if ix["dimension"] else ""))
        click.echo(f"  store {ix['vector_store']}  size {_size(ix['bytes'])}  updated {ix['updated_at'] or '-'}")


@click.command("remove")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--index-dir", default=DEFAULT_INDEX_DIR, show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index.")
@click.option("--dry-run", is_flag=True, help="Only list the documents that would be removed.")
@click.option("--wait", is_flag=True, help="If another process writes the index, wait for it instead of failing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def remove_cmd(paths: List[Path], index_dir: Path, dry_run: bool, wait: bool, as_json: bool) -> None:
    """Remove the documents of the files and folders PATH... from the index.

    PATH need not exist any more. The files are not touched; 'ragloom index' on a folder holding
    them adds them again (use its --exclude to keep them out).
    """
    from ragloom.cli.indexing import no_write_access
    from ragloom.errors import IndexLockedError
    from ragloom.ingestion.manage import remove_paths

    try:
        out = remove_paths(list(paths), index_dir, wait=wait, on_wait=_told(index_dir), dry_run=dry_run)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    except PermissionError as exc:  # the lock file or the database of an index the user cannot write
        raise no_write_access(exc, index_dir) from None
    except IndexLockedError as exc:
        raise click.ClickException(f"{exc}, or pass --wait to queue behind it") from None
    except ValueError as exc:
        raise click.ClickException(f"{index_dir}: {exc}") from None
    if as_json:
        _echo_json(out)
        return
    verb = "would remove" if dry_run else "removed"
    for item in out["removed"]:
        click.echo(f"  {verb} {item['source']} ({item['nodes']} nodes)")
    for path in out["not_found"]:
        click.secho(f"  no document in the index under {path}", fg="yellow")
    click.echo(f"{index_dir}: {verb} {out['documents_removed']} documents, {out['nodes_removed']} nodes; "
               f"{out['documents_left']} documents and {out['nodes_left']} nodes {'would be ' if dry_run else ''}left")


@click.command("import-llamaindex")
@click.argument("persist_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--index-dir", default=DEFAULT_INDEX_DIR, show_default=True, type=click.Path(path_type=Path),
              help="ragloom index directory to import into (created if missing).")
@click.option("--embed-model", default=None, metavar="SPEC",
              help="The model that made the LlamaIndex vectors (as for 'ragloom index --embed-model', e.g. 'fp32', "
                   "'local:BAAI/bge-small-en-v1.5', 'openai:text-embedding-3-small') [default: the bundled "
                   "all-MiniLM-L6-v2 in fp32, for 384-dimensional vectors]. It is checked against the vectors.")
@click.option("--index-id", default=None, help="The LlamaIndex index to import when the folder holds several.")
@click.option("--no-verify", is_flag=True,
              help="Skip re-embedding a few stored nodes to check the model (the dimension is still checked "
                   "when the model knows it without a request).")
@click.option("--wait", is_flag=True, help="If another process writes --index-dir, wait for it instead of failing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def import_llamaindex_cmd(persist_dir: Path, index_dir: Path, embed_model: Optional[str], index_id: Optional[str],
                          no_verify: bool, wait: bool, as_json: bool) -> None:
    """Import a LlamaIndex storage folder (PERSIST_DIR, written by storage_context.persist()) into
    --index-dir, keeping its vectors: nothing is re-embedded.

    Reads docstore.json, index_store.json and default__vector_store.json of a VectorStoreIndex.
    Importing the same folder again changes nothing; changed documents are replaced.
    """
    from ragloom._optional import MissingDependencyError
    from ragloom.errors import IndexLockedError
    from ragloom.storage.llamaindex_import import import_llamaindex_dir

    try:
        summary = import_llamaindex_dir(persist_dir, index_dir, embed_model=embed_model, index_id=index_id,
                                        verify=not no_verify, wait=wait, on_wait=_told(index_dir))
    except (FileNotFoundError, ValueError, MissingDependencyError) as exc:
        raise click.ClickException(str(exc)) from None
    except IndexLockedError as exc:
        raise click.ClickException(f"{exc}, or pass --wait to queue behind it") from None
    out: Dict[str, Any] = summary.to_dict()
    if as_json:
        _echo_json(out)
        return
    d = out["documents"]
    click.secho(f"Imported LlamaIndex index {out['index_id']} from {out['persist_dir']} into {index_dir}", bold=True)
    click.echo(f"  nodes read      {out['nodes_read']} ({out['dimension']} dims); {out['nodes_written']} written")
    click.echo(f"  documents       {d['read']} ({d['added']} added, {d['updated']} updated, "
               f"{d['unchanged']} unchanged)")
    click.echo(f"  embed model     {out['embed_model']}"
               + (f" (checked on {out['verified']['sample']} nodes, cosine >= {out['verified']['min_cosine']})"
                  if out["verified"] else " (not checked)"))
    for f in out["failed"][:20]:
        click.secho(f"  not imported    {f['id']}: {f['reason']}", fg="yellow")


#: registered on the ``ragloom`` group by ``ragloom/cli/main.py``
MANAGE_COMMANDS = (list_cmd, remove_cmd, import_llamaindex_cmd)
