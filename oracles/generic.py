"""Generic oracles: a regular expression over the output, or the user's interestingness command.

The command follows C-Reduce's convention, once for the whole project: it is run in the
candidate's scratch folder with the candidate's path as its last argument, and exit status 0 means
"still interesting".
"""
from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from oracles.base import Oracle, Signature, excerpt
from oracles.outcome import RunResult


class Regex(Oracle):
    name = "regex"

    def __init__(self, pattern: str):
        try:
            self.pattern = re.compile(pattern, re.M)
        except re.error as exc:
            raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None

    def classify(self, run: RunResult) -> Signature | None:
        m = self.pattern.search(run.output)
        if not m:
            return None
        return Signature(self.name, (("pattern", self.pattern.pattern),),
                         f"Output matches `{self.pattern.pattern}`", excerpt(run.output, m.group(0).splitlines()[0] if m.group(0) else "", 2, 3))


class Script(Oracle):
    """Runs `COMMAND FILE` on the candidate source; exit 0 = the candidate is still interesting.

    It runs each candidate itself (`runs_candidates`): `run_candidate` gives the command's own run,
    and `classify` turns a run that exited 0 into the one signature this oracle has."""

    name = "script"
    runs_candidates = True

    def __init__(self, command: str, timeout: float = 300.0):
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("script: oracle needs a command")
        self.timeout = timeout

    def run_candidate(self, source: str, filename: str, timeout: float | None = None) -> RunResult:
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

    def interesting(self, source: str, filename: str) -> tuple[bool, str]:
        run = self.run_candidate(source, filename)
        return self.classify(run) is not None, run.output

    def classify(self, run: RunResult) -> Signature | None:
        if run.returncode != 0 or run.timed_out:
            return None
        return self.signature()

    def signature(self) -> Signature:
        return Signature(self.name, (("command", shlex.join(self.argv)),),
                         f"Interestingness command `{shlex.join(self.argv)}` accepts the program")


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")
