"""A measurement in a fresh interpreter: memory one route freed must not hide
another's (bench/tokenizer_memory.py, bench/word_table_memory.py)."""

from __future__ import annotations

import json
import subprocess
import sys


def measured_apart(script: str, *args: str) -> dict[str, float | str]:
    """Run `script` with `args` in a new Python process; the JSON object its last line prints."""
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
    measured: dict[str, float | str] = json.loads(result.stdout.strip().splitlines()[-1])
    return measured
