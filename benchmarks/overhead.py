#!/usr/bin/env python3
"""Per-candidate overhead: reducer's warm workers against the program's own work and fresh interpreters.

usage: python benchmarks/overhead.py [--programs FILE ...] [--reps 5] [--keep-caches] [--out FILE]

For each small failing program (default: a few of tests/programs/ and every hand-reduced minimum of
benchmarks/minimal/) it measures the median wall time per run of:

- in-process: the program's own JAX work, exec'd `--reps` times in one interpreter that has already
  imported jax (and what the program imports) and run the program once; the JAX caches are
  cleared before each run (as for a new candidate) unless --keep-caches;
- warm: `reducer.workers.sandbox.Sandbox(..., warm=True).run(source, limits)`, the path `reducer reduce`
  takes per candidate: the fork server's long-lived runner (`reducer.workers.runner`; the server is
  preloaded with `preload_modules`, as `Reduction` builds it), timed after one untimed run that
  starts the server and the runner and tells the failure; the harness's watches are then set as
  `Reduction.establish` sets them for that failure (a wrong gradient: the gradient watch, with the
  operation at fault to confirm; other failures: none), so a numeric case's figures include the
  check that runs after the program;
- forked: the same sandbox with `isolated=True`: a child forked from the fork server for that
  candidate alone (how an interesting candidate is confirmed);
- fresh: the same sandbox with `fresh=True`: a new `python -m reducer.harness` per run (`--cold`);
- warm and forked again with JAX's persistent compilation cache shared by the runs
  (`Sandbox.compile_cache`, as a reduction's candidates have it), filled by the untimed first run.

Prints a markdown table with warm/in-process (the overhead factor; target at most 1.3) and
fresh/warm (the speed-up over fresh interpreters; target at least 3). A program that kills its
interpreter (a segfault) has no in-process figure. Run it with the project's interpreter
(.venv/bin/python), on a quiet machine: the figures are medians, but still noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import oracles  # noqa: E402
from oracles.outcome import RunResult  # noqa: E402
from bench import DEFAULT_BENCH as BENCH  # noqa: E402
from reducer.reduce import preload_modules  # noqa: E402
from reducer.cross_checks.locate import WANTED_ENV  # noqa: E402
from reducer.workers.sandbox import Limits, Sandbox  # noqa: E402

DEFAULT_PROGRAMS = [ROOT / "tests" / "programs" / f"{name}.py"
                    for name in ("nonlinear_jvp", "while_loop_grad", "custom_vjp_wrong_arity")]
LIMITS = Limits(timeout=120.0)


def in_process(path: str, reps: int, keep_caches: bool) -> None:
    """Runs in a child interpreter: exec PATH once, then `reps` timed times; prints the seconds as
    JSON on the original stdout (the program's own output goes to /dev/null)."""
    report = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    source = Path(path).read_text()
    for name in preload_modules(source):
        try:
            __import__(name)
        except BaseException:
            pass
    import jax

    code = compile(source, path, "exec")

    def once() -> float:
        if not keep_caches:
            jax.clear_caches()
        start = time.perf_counter()
        try:
            exec(code, {"__name__": "__main__", "__file__": path})
        except BaseException:
            pass
        return time.perf_counter() - start

    once()
    report.write(json.dumps([once() for _ in range(reps)]) + "\n")
    report.flush()


def time_in_process(path: Path, reps: int, keep_caches: bool, scratch: Path) -> float | None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_TRACEBACK_FILTERING="off", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(Path(__file__).resolve()), "_inprocess", str(path), str(reps), str(int(keep_caches))]
    done = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=120 + 60 * reps)
    try:
        return statistics.median(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return None


def watch_like_a_reduction(box: Sandbox, first: RunResult) -> None:
    """Keep only the watches a reduction of the failure `first` shows would keep."""
    found = oracles.detect(first)
    if found is None or not found[0].needs_gradient_checks:
        box.check_gradients = False
    elif found[0].watches:
        box.extra_env["REDUCER_WATCHES"] = ",".join(found[0].watches)
        box.extra_env[WANTED_ENV] = found[1].get("op") or ""


def time_sandbox(path: Path, reps: int, scratch: Path, cache: bool = False) -> tuple[float, float, float]:
    """Median seconds per run: (warm runner, forked child, fresh interpreter); with `cache`, the warm
    and forked runs share JAX's persistent compilation cache (`Sandbox.compile_cache`), as a
    reduction's candidates do."""
    source = path.read_text()
    box = Sandbox(scratch / ("runs-cached" if cache else "runs"), script_name=path.name, warm=True,
                  warm_modules=preload_modules(source), check_gradients=True,
                  compile_cache=scratch / "jax-cache" if cache else None)
    try:
        watch_like_a_reduction(box, box.run(source, LIMITS))  # also starts the fork server (and fills the cache)
        times = []
        for way in ({}, {"isolated": True}, {"fresh": True}):
            runs = []
            for _ in range(reps):
                start = time.monotonic()
                box.run(source, LIMITS, **way)
                runs.append(time.monotonic() - start)
            times.append(statistics.median(runs))
    finally:
        box.close()
    return times[0], times[1], times[2]


def main(argv: list[str]) -> None:
    if argv[:1] == ["_inprocess"]:
        return in_process(argv[1], int(argv[2]), argv[3] == "1")
    ap = argparse.ArgumentParser(description="per-candidate time: in-process vs warm workers vs fresh interpreters")
    ap.add_argument("--programs", nargs="+", type=Path, help="failing programs (default: a few small ones)")
    ap.add_argument("--reps", type=int, default=5, help="timed runs per program and way (default 5)")
    ap.add_argument("--keep-caches", action="store_true", help="do not clear JAX's caches between in-process runs")
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    programs = args.programs or DEFAULT_PROGRAMS + sorted((BENCH / "minimal").glob("*.py"))
    missing = [p for p in programs if not p.is_file()]
    if missing:
        sys.exit(f"overhead.py: no such program: {missing[0]}")
    if args.reps < 1:
        sys.exit("overhead.py: --reps must be at least 1")
    ratios, speedups = [], []
    rows = ["| program | in-process s | warm s | forked s | fresh s | warm/in-process | forked/in-process "
            "| fresh/warm | warm, compile cache s | forked, compile cache s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for path in programs:
        with tempfile.TemporaryDirectory(prefix="overhead-") as tmp:
            inproc = time_in_process(path.resolve(), args.reps, args.keep_caches, Path(tmp))
            warm, forked, fresh = time_sandbox(path.resolve(), args.reps, Path(tmp))
            warm_cached, forked_cached, _ = time_sandbox(path.resolve(), args.reps, Path(tmp), cache=True)
        name = path.stem if path.parent.name != "minimal" else f"minimal/{path.stem}"
        ratio = f"{warm / inproc:.2f}" if inproc else "n/a"
        ratios += [warm / inproc] if inproc else []
        speedups.append(fresh / warm)
        fork_ratio = f"{forked / inproc:.2f}" if inproc else "n/a"
        rows.append(f"| {name} | {f'{inproc:.3f}' if inproc else 'n/a (crashes)'} | {warm:.3f} | {forked:.3f} "
                    f"| {fresh:.3f} | {ratio} | {fork_ratio} | {fresh / warm:.1f} | {warm_cached:.3f} "
                    f"| {forked_cached:.3f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    table = (f"reps: {args.reps} (medians); JAX caches {'kept' if args.keep_caches else 'cleared'} between "
             f"in-process runs; {os.cpu_count()} CPUs\n\n" + "\n".join(rows) + "\n\n"
             f"median over programs: warm/in-process {statistics.median(ratios) if ratios else float('nan'):.2f} "
             f"(target <= 1.3), fresh/warm {statistics.median(speedups):.1f} (target >= 3)\n")
    if args.out:
        args.out.write_text(table)
    print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
