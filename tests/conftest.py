"""Shared fixtures: paths to the project's own failing programs and their recorded outputs."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reducer.workers.sandbox import RunResult

TESTS = Path(__file__).resolve().parent
PROGRAMS = TESTS / "programs"
OUTPUTS = TESTS / "data" / "outputs"
GPU_OUTPUTS = TESTS / "data" / "gpu"
HAS_ENZYME = importlib.util.find_spec("enzyme_ad") is not None

needs_enzyme = pytest.mark.skipif(not HAS_ENZYME, reason="enzyme-ad is not installed")


def recorded(name: str) -> RunResult:
    """A real run of tests/programs/NAME.py, recorded by tests/data/record.py."""
    return RunResult(**json.loads((OUTPUTS / f"{name}.json").read_text()))


def reducer_cli(*args, cwd=None, timeout=600, **kw) -> subprocess.CompletedProcess:
    """Run the `reducer` command as a user would (a real subprocess)."""
    return subprocess.run([sys.executable, "-m", "reducer.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL, **kw)
