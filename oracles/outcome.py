"""What one run did and what failure it showed: the two records the oracles and the workers both
use. A leaf module: it imports nothing of the project, so `oracles` and `reducer` both import it
and neither imports the other for it."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RunResult:
    """What one run of a candidate did."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    cancelled: bool = False
    truncated: bool = False
    harness: dict = field(default_factory=dict)
    reused: bool = False  # ran in a long-lived runner after other candidates (reducer.workers.runner)

    @property
    def signal(self) -> int | None:
        """The signal that killed the process, if it died by one."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    @property
    def output(self) -> str:
        return self.stdout + ("\n" if self.stdout and not self.stdout.endswith("\n") else "") + self.stderr


@dataclass(frozen=True)
class Signature:
    """A failure's identity: family plus ordered fields; the human title (which may quote the
    failure's own words, values included) and the excerpt are not part of it."""

    family: str
    fields: tuple[tuple[str, str], ...]
    title: str = field(default="", compare=False)
    excerpt: str = field(default="", compare=False)

    def get(self, key: str, default: str = "") -> str:
        return dict(self.fields).get(key, default)

    def to_dict(self) -> dict:
        return {"family": self.family, "fields": dict(self.fields), "title": self.title}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> "Signature":
        return cls(data["family"], tuple((str(k), str(v)) for k, v in data.get("fields", {}).items()),
                   data.get("title", ""))

    def __str__(self) -> str:
        parts = " ".join(f"{k}={v}" for k, v in self.fields)
        return f"{self.family}: {parts}" if parts else self.family


def program_outcome(run: RunResult) -> RunResult:
    """The run as the program itself ended it. The harness records the program's exit status before
    its own checks (`reducer.harness`); a process that then died during those checks died by the
    harness's doing, not the program's, so the recorded status stands in for the signal."""
    program = run.harness.get("program") or {}
    if run.harness.get("checking") and "exit" in program and run.returncode != program["exit"]:
        return dataclasses.replace(run, returncode=program["exit"])
    return run
