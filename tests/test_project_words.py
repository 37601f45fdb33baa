"""The repository speaks to its users: no words about how it is being worked on and no machine paths in any
tracked file (a ``mktemp`` template under /var/tmp aside)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = re.compile(r"stop [0-9]+|issue [0-9]+|issue #|/tmp/|/work/", re.I)


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_work_process_words_or_machine_paths():
    found = []
    for path in tracked_files():
        if path.name == Path(__file__).name or not path.is_file():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line) and "mktemp" not in line:
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not found, "\n".join(found)
