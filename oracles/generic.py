"""Generic oracles: a regular expression over the output, or the user's interestingness command.

The command follows C-Reduce's convention, once for the whole project: it is run in the
candidate's scratch folder with the candidate's path as its last argument (`reducer.workers.command`
runs it), and exit status 0 means "still interesting".
"""
from __future__ import annotations

import re
import shlex

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
                         f"Output matches `{self.pattern.pattern}`",
                         excerpt(run.output, m.group(0).splitlines()[0] if m.group(0) else "", 2, 3))


class Script(Oracle):
    """Runs `COMMAND FILE` on the candidate source; exit 0 = the candidate is still interesting.

    Candidates run through the command, not in the sandbox (`runs_candidates`; the job's
    `reducer.workers.command.CommandRunner` runs them), and `classify` turns a run that exited 0
    into the one signature this oracle has."""

    name = "script"
    runs_candidates = True

    def __init__(self, command: str, timeout: float = 300.0):
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("script: oracle needs a command")
        self.timeout = timeout

    def classify(self, run: RunResult) -> Signature | None:
        if run.returncode != 0 or run.timed_out:
            return None
        return self.signature()

    def signature(self) -> Signature:
        return Signature(self.name, (("command", shlex.join(self.argv)),),
                         f"Interestingness command `{shlex.join(self.argv)}` accepts the program")

