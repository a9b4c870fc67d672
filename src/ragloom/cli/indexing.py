"""What the CLI commands do, kept apart from argument parsing so it can be tested and reused."""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import click

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def interrupts_remembered() -> Iterator[Callable[[Any], None]]:
    """Within the block, Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` as usual and is also
    remembered; the callback yielded raises it again when called after that.  CPython drops an
    exception raised while a finalizer (``__del__``) runs: a Ctrl-C that landed in one (a
    ``ZipFile`` being collected, say) was ignored and the run went on to its end.  Passed as
    ``index_paths(on_progress=...)``, the callback stops the run at the next file or batch.  Outside
    the main thread, where no signal arrives, nothing is installed.  The traceback CPython prints for
    the dropped exception ("Exception ignored in ...") is not shown (``sys.unraisablehook``)."""
    import signal
    import threading

    seen = threading.Event()

    def check(_progress: Any = None) -> None:
        if seen.is_set():
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield check
        return

    def handler(signum: int, frame: Any) -> None:
        seen.set()
        raise KeyboardInterrupt

    def unraisable(info: Any) -> None:  # the dropped interrupt's "Exception ignored in ..." traceback
        if not isinstance(info.exc_value, KeyboardInterrupt):
            previous_hook(info)

    previous, previous_hook = signal.signal(signal.SIGINT, handler), sys.unraisablehook
    sys.unraisablehook = unraisable
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook


def run_index(paths: Sequence[Path], index_dir: Path, chunk_size: Optional[int] = None,
              chunk_overlap: Optional[int] = None, required_exts: Optional[List[str]] = None,
              exclude: Optional[List[str]] = None, recursive: bool = True, full: bool = False,
              embed_model: str = "default", show_progress: bool = True,
              include_hidden: bool = False, files_per_batch: int = 32,
              wait: bool = False, parser: Optional[str] = None,
              max_file_size: Optional[int] = 100 * 2**20, read_timeout: Optional[float] = 300.0,
              keep_junk: bool = False,
              **distribution: Any) -> Dict[str, Any]:
    """``ragloom index``: one call of :func:`ragloom.ingestion.paths.index_paths`; returns its summary
    as a dict (:meth:`IndexSummary.to_dict <ragloom.ingestion.paths.IndexSummary.to_dict>`).
    ``distribution``: ``engine``, ``ray_address``, ``num_workers``, ``vector_store`` of ``index_paths``.

    Raises:
        click.BadParameter: invalid chunk size/overlap or ``files_per_batch``.
        click.ClickException: the index is locked by another process (and not ``wait``), was built
            with another embed model or vector store, an optional dependency (ray, pymilvus) is
            missing, or a remote embedding provider failed (:class:`~ragloom.errors.RagloomError`).
    """
    from ragloom._optional import MissingDependencyError
    from ragloom.errors import IndexLockedError, PathNotFoundError, RagloomError
    from ragloom.ingestion.paths import display_path, index_paths

    def told(pid: Optional[int]) -> None:
        click.echo(f"index {index_dir} is locked by pid {pid if pid is not None else '?'}; "
                   "waiting for it to finish (--wait)", err=True)

    try:
        with interrupts_remembered() as check:
            summary = index_paths(
                paths, index_dir, chunk_size=chunk_size, chunk_overlap=chunk_overlap, required_exts=required_exts,
                exclude=exclude, recursive=recursive, full=full, embed_model=embed_model,
                show_progress=show_progress, include_hidden=include_hidden, files_per_batch=files_per_batch,
                wait=wait, on_wait=told, parser=parser, max_file_size=max_file_size, read_timeout=read_timeout,
                keep_junk=keep_junk, on_progress=check,
                **distribution,
            )
    except (MissingDependencyError, ConnectionError) as exc:
        raise click.ClickException(str(exc)) from None
    except IndexLockedError as exc:
        raise click.ClickException(f"{exc}, or pass --wait to queue behind it") from None
    except PathNotFoundError as exc:
        raise click.BadParameter(f"{display_path(str(exc.filename))}: {exc.strerror}", param_hint="PATHS") from None
    except (FileExistsError, NotADirectoryError, PermissionError, FileNotFoundError) as exc:
        where = exc.filename or index_dir
        raise click.ClickException(f"cannot use {where}: {exc.strerror or exc} (check --index-dir)") from None
    except ValueError as exc:
        message = str(exc)
        if "--chunk-size" in message:  # the library already names the option
            raise click.ClickException(message) from None
        option = next((f"--{name.replace('_', '-')}" for name in ("chunk_overlap", "chunk_size", "files_per_batch")
                       if name in message), None)
        if option is not None:
            raise click.BadParameter(message, param_hint=option) from None
        raise click.ClickException(f"{index_dir}: {message}") from None
    except RagloomError as exc:  # e.g. a remote embedding server that does not answer
        raise click.ClickException(str(exc)) from None
    return summary.to_dict()


def no_write_access(exc: PermissionError, index_dir: Path) -> click.ClickException:
    """The one-line error of a command that writes an index this user cannot write (its lock file or
    database)."""
    return click.ClickException(f"cannot use {exc.filename or index_dir}: {exc.strerror or exc} "
                                "(ragloom needs write access to the index directory)")


def open_service(index_dir: Path, **kwargs: Any) -> Any:
    """:class:`ragloom.service.IndexService` on an existing index, its errors as one-line CLI messages.

    Raises:
        click.ClickException: no index in ``index_dir``, another embed model than the index's, or
            the Milvus server the index records does not answer.
    """
    from ragloom.service import IndexService

    try:
        return IndexService(index_dir, **kwargs)
    except (FileNotFoundError, ConnectionError) as exc:
        raise click.ClickException(str(exc)) from None
    except PermissionError as exc:  # e.g. an index directory the user cannot write (SQLite's WAL)
        raise click.ClickException(f"cannot use {exc.filename or index_dir}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise click.ClickException(f"{index_dir}: {exc}") from None  # (the library's message has the fix)
