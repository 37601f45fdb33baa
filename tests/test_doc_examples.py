"""Every Python block of the README and of docs/*.md runs as a program (fresh interpreter, time limit), and
every shell block of ``python -m frontend`` commands runs too. A block that cannot run here is preceded by a
``<!-- not runnable: REASON -->`` comment naming why (e.g. it needs a CUDA device); signatures and grammars are
written as plain (language-less) blocks."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"(?:<!--\s*not runnable:\s*(?P<why>[^>]*?)\s*-->\s*\n)?```(?P<lang>[\w-]*)\n(?P<code>.*?)```",
                    re.S)


def blocks(lang: set[str]) -> list[tuple[str, str, str | None]]:
    """``(id, code, not-runnable reason)`` for every fenced block of a language in ``lang``."""
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in _BLOCK.finditer(text):
            if m.group("lang") in lang:
                line = text[:m.start("code")].count("\n")
                out.append((f"{page.relative_to(ROOT)}:{line}", m.group("code"), m.group("why")))
    return out


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=400)


PYTHON = blocks({"python", "py"})
SHELL = blocks({"sh", "bash", "console", "shell"})


def test_every_skip_says_why():
    for ident, _, why in PYTHON + SHELL:
        assert why is None or len(why) > 10, f"{ident}: 'not runnable' needs a reason"


@pytest.mark.parametrize("code, why", [(c, w) for _, c, w in PYTHON], ids=[i for i, _, _ in PYTHON])
def test_python_block_runs(code: str, why: str | None, tmp_path: Path) -> None:
    if why is not None:
        pytest.skip(f"not runnable: {why}")
    script = tmp_path / "block.py"
    script.write_text(code)
    proc = _run([sys.executable, str(script)], tmp_path)
    assert proc.returncode == 0, f"the block failed:\n{code}\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n" \
                                 f"{proc.stderr[-4000:]}"
    bad = [line for line in proc.stderr.splitlines() if re.search(r"cannot schedule new futures", line, re.I)]
    assert not bad, f"the block ran but printed errors:\n{proc.stderr[-4000:]}"


@pytest.mark.parametrize("code, why", [(c, w) for _, c, w in SHELL], ids=[i for i, _, _ in SHELL])
def test_shell_block_runs(code: str, why: str | None, tmp_path: Path) -> None:
    if why is not None:
        pytest.skip(f"not runnable: {why}")
    for line in code.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        args = shlex.split(command)
        assert args[:3] == ["python", "-m", "frontend"], f"a runnable shell block runs python -m frontend: {line!r}"
        proc = _run([sys.executable, *args[1:]], tmp_path)
        assert proc.returncode == 0, f"{command} failed:\n{proc.stderr[-2000:]}"
        assert proc.stdout.strip(), f"{command} printed nothing"
