"""``scripts/install_without_torch.sh`` refuses bad extras before it installs anything.

The script runs with ``PYTHON`` set to a wrapper that logs every call and refuses ``-m pip`` (so a
wrong refusal cannot touch this environment); the log shows whether pip was reached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install_without_torch.sh"


def _run(tmp_path: Path, target: str) -> "tuple[subprocess.CompletedProcess[str], list[str]]":
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{log}"\n'
        'if [ "${1:-}" = "-m" ] && [ "${2:-}" = "pip" ]; then exit 99; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    env = dict(os.environ, PYTHON=str(wrapper))
    res = subprocess.run(["bash", str(SCRIPT), target], capture_output=True, text=True, env=env, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return res, calls


@pytest.mark.parametrize("target", ['.[office,nosuch]', '.[ server , nosuch ]'])
def test_an_unknown_extra_of_this_checkout_is_refused_before_any_install(tmp_path, target):
    res, calls = _run(tmp_path, target)
    assert res.returncode == 2, res.stderr
    assert "unknown extra(s) ['nosuch']" in res.stderr
    assert "'office'" in res.stderr  # the extras there are, listed
    assert not [c for c in calls if c.startswith("-m pip")]


def test_an_extra_that_needs_torch_is_refused_before_any_install(tmp_path):
    res, calls = _run(tmp_path, ".[server,llm]")
    assert res.returncode == 2
    assert "the extra 'llm' needs torch" in res.stderr
    assert calls == []


@pytest.mark.parametrize("target", [".[office,server]", ".[Milvus_Server,OFFICE]"])  # names as pip compares them
def test_known_extras_reach_the_install(tmp_path, target):
    res, calls = _run(tmp_path, target)
    assert res.returncode == 99  # the wrapper's refusal of pip: the check let it through
    assert [c for c in calls if c.startswith("-m pip")] == ["-m pip install -q --no-deps -e ."]
