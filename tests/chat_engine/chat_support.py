"""Shared data of the chat engine tests (the documents indexed, the recording server's answers)."""

from __future__ import annotations

DOCS = {
    "eiffel.md": "# The Eiffel Tower\n\nThe Eiffel Tower is a wrought-iron lattice tower in Paris, France. "
                 "It was completed in 1889 for the World's Fair. It is 330 metres tall.\n",
    "python.md": "# Python\n\nPython is a programming language created by Guido van Rossum. "
                 "Its first release was in 1991.\n",
    "tea.md": "# Green tea\n\nBrew green tea with water at about 80 degrees Celsius for two minutes.\n",
}
STANDALONE_MARK = "Standalone question:"


def condensing_answer(standalone: str, answer: str):
    """The server's answer: ``standalone`` to a condense prompt, ``answer`` to anything else."""
    return lambda prompt: standalone if STANDALONE_MARK in (prompt or "") else answer
