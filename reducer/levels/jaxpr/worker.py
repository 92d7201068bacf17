"""The traced-program level's warm worker: runs jaxpr specs without writing Python per candidate.

`python -m reducer.levels.jaxpr.worker --serve` imports jax (and Enzyme-JAX when installed) once, then
forks a child that reads candidates as JSON lines (`{"module": SPEC}`, the request format of
`reducer.levels.mlir.run.Server`) and answers each with `{"returncode", "stderr", "seconds"}`: 0 when the
transformed program ran, 1 and the traceback when it raised. What is printed on file descriptor 2
while a candidate runs (MLIR diagnostics, absl logs) is captured in the file `capture`; a candidate
that kills the child is answered for by the parent, which forks the next child at once.
`JaxprServer` is the client side.
"""
from __future__ import annotations

import sys

from reducer.levels.mlir.run import Server
from reducer.levels.mlir.worker import serve_forked

WARM_UP = '{"args":[],"jaxpr":{"eqns":[],"in":[],"out":[{"dtype":"int32","lit":0}]},"transforms":[]}'


class JaxprServer(Server):
    """`reducer.levels.mlir.run.Server` speaking to this worker; `run_spec(spec_text, timeout)`."""

    worker = "reducer.levels.jaxpr.worker"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.env["JAX_TRACEBACK_FILTERING"] = "off"

    def run_spec(self, spec: str, timeout: float = 60.0):
        """Run one spec; a (re)started worker first imports jax on a trivial spec, so that
        `timeout` is the candidate's own."""
        if self.proc is None or self.proc.poll() is not None:
            self.run("jaxpr", WARM_UP, None, 120.0)
        return self.run("jaxpr", spec, None, timeout)


def run_request(request: dict) -> None:
    from reducer.levels.jaxpr import program as jaxpr_program

    jaxpr_program.run(request["module"])


def serve() -> None:
    """Import once, then serve candidates in forked children (`reducer.levels.mlir.worker.serve_forked`)."""
    import jax  # noqa: F401
    import jax.numpy  # noqa: F401

    try:
        import enzyme_ad.jax  # noqa: F401
    except ImportError:
        pass
    from reducer.levels.jaxpr.codec import registry

    registry()
    serve_forked(run_request)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print("usage: python -m reducer.levels.jaxpr.worker --serve", file=sys.stderr)
        sys.exit(2)
