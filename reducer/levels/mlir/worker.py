"""The IR-level worker process.

`python -m reducer.levels.mlir.worker --serve` imports jax and Enzyme-JAX once and forks a child that
reads candidates as JSON lines on standard input (`{"kind", "module", "pipeline"}`) and answers
each with a JSON line (`{"returncode", "stderr", "seconds"}`), running them in its own process one
after another. What MLIR prints on file descriptor 2 during a candidate goes to the file `capture`
in the working directory, so that a crash still leaves its output; when a candidate kills the
child, the parent answers for it and forks a fresh child (milliseconds, not a new interpreter).

`python -m reducer.levels.mlir.worker FILE.mlir [--xla]` runs once on a file: the pipeline on its first
line (Enzyme-JAX's dump format), or XLA's compiler with `--xla`.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

from reducer.levels.mlir.run import ENZYME, XLA, execute

CAPTURE = "capture"


def serve_requests(saved_stderr: int, run_one) -> None:
    """Answer candidates until standard input ends (in the forked child): `run_one(request)` runs
    one, its exception is the failure; what it prints on descriptor 2 is captured in CAPTURE."""
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stderr.flush()
        fd = os.open(CAPTURE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
        start = time.monotonic()
        tb = ""
        try:
            run_one(request)
            code = 0
        except Exception:
            code, tb = 1, traceback.format_exc()
        seconds = time.monotonic() - start
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)
        with open(CAPTURE, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        out.write(json.dumps({"returncode": code, "stderr": text + tb, "seconds": seconds}) + "\n")
        out.flush()


def run_request(request: dict) -> None:
    execute(request["kind"], request["module"], request.get("pipeline"))


def serve() -> None:
    """Import once, then serve candidates in forked children (`serve_forked`)."""
    import jax  # noqa: F401  (warm: every candidate needs them)
    import jax.extend.backend  # noqa: F401

    try:
        from enzyme_ad.jax import enzyme_call  # noqa: F401
    except ImportError:  # XLA-only work needs no Enzyme-JAX
        pass

    serve_forked(run_request)


def serve_forked(run_one) -> None:
    """Fork a child that answers requests with `run_one` (`serve_requests`); when a candidate
    kills it, answer for the candidate (the signal and what it printed to CAPTURE) and fork the
    next child at once. Returns when standard input ends. Shared with the jaxpr worker."""
    import faulthandler

    from reducer.workers.forkserver import die_with_parent, watch_parent

    watch_parent()  # nothing outlives the client, not even a candidate looping forever
    saved, server = os.dup(2), os.getpid()
    while True:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            die_with_parent(server)
            faulthandler.enable(file=sys.stderr, all_threads=False)
            try:
                serve_requests(saved, run_one)
            except BaseException:
                os._exit(3)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return  # standard input ended
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        try:
            with open(CAPTURE, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = ""
        sys.stdout.write(json.dumps({"returncode": code, "stderr": text, "seconds": None}) + "\n")
        sys.stdout.flush()


def run_file(path: str, kind: str) -> int:
    from reducer.levels.mlir import module as mm

    with open(path, encoding="utf-8") as fh:
        pipeline, module_text = mm.split(fh.read())
    if kind == ENZYME and not pipeline:
        print(f"{path}: no pipeline on the first line (// PIPELINE); use --xla to compile it with XLA",
              file=sys.stderr)
        return 2
    execute(kind, module_text, pipeline)
    print("ran without error")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        serve()
        return 0
    files = [a for a in argv if not a.startswith("--")]
    if len(files) != 1:
        print("usage: python -m reducer.levels.mlir.worker FILE.mlir [--xla] | --serve", file=sys.stderr)
        return 2
    return run_file(files[0], XLA if "--xla" in argv else ENZYME)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
