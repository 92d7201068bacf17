"""Where a candidate runs when the user's own interestingness command judges it
(`--oracle script:COMMAND`): C-Reduce's convention, once for the whole project. The candidate is
written as FILENAME in a scratch folder of its own, `COMMAND FILE` runs there in a session of its
own (no standard input, a time limit), and its exit status and output are the run the oracle
(`oracles.generic.Script`) classifies: exit 0 means "still interesting".
"""
from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from oracles.outcome import RunResult


class CommandRunner:
    """Runs candidates through `argv` (the command and its arguments, the candidate's path last)."""

    def __init__(self, argv: list[str], timeout: float = 300.0):
        self.argv, self.timeout = list(argv), timeout

    def run(self, source: str, filename: str, timeout: float | None = None) -> RunResult:
        """The command's run on `source`, written as `filename` in a scratch folder of its own."""
        with tempfile.TemporaryDirectory(prefix="reducer-script-") as tmp:
            path = Path(tmp) / filename
            path.write_text(source)
            start = time.monotonic()
            try:
                done = subprocess.run(self.argv + [str(path)], cwd=tmp, capture_output=True, text=True,
                                      timeout=timeout or self.timeout, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
            except subprocess.TimeoutExpired as exc:
                return RunResult(None, _text(exc.stdout), _text(exc.stderr), time.monotonic() - start, timed_out=True)
            except OSError as exc:
                raise ValueError(f"cannot run interestingness command {self.argv[0]!r}: {exc.strerror}") from None
            return RunResult(done.returncode, done.stdout, done.stderr, time.monotonic() - start)


def runner_for(oracle) -> CommandRunner | None:
    """The runner of an oracle judged by a command (`runs_candidates`), or None for the sandbox."""
    if oracle is None or not oracle.runs_candidates:
        return None
    return CommandRunner(oracle.argv, oracle.timeout)


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")
