"""The ``ragloom`` command: ``ragloom index PATH...`` and ``ragloom query TEXT``."""

from ragloom.cli.main import cli, main

__all__ = ["cli", "main"]
