"""What the hunt finds that no family recognises (`unrecognised`: the exception a program ended with,
its numbers masked) and a probe that never ended (`timeout`): findings a person judges."""
from __future__ import annotations

import re

from oracles.base import Signature, final_exception
from oracles.outcome import RunResult

#: a program that did not end within its limit
TIMEOUT = Signature("timeout", (("after", "limit"),), title="the program did not end")


def signature(run: RunResult) -> Signature:
    """The signature of a run no family recognises: how it ended, numbers masked."""
    ended = final_exception(run.output)
    kind, message = ended if ended else ("exit", f"status {run.returncode}")
    message = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", message.splitlines()[0] if message else "")[:120]
    return Signature("unrecognised", (("exception", kind), ("message", message)),
                     title=f"{kind}: {message}", excerpt=run.output[-2000:])
