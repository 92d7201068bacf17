"""Where many independent programs run: a hunt's probes and the reductions of its findings, and the
cases of `reducer corpus check`.

`LocalExecutor` runs probes in the sandbox's warm workers on this machine, `--jobs` at a time;
`RayExecutor` runs each probe and each reduction as a Ray task (one CPU, or one GPU with
`--platform gpu`) on the cluster named by `RAY_ADDRESS`, or on a local one it starts. Both hand
back `(index, RunResult)` pairs as they finish; the sweep orders them, so the summary does not
depend on which finished first. A reduction is `reducer reduce` in a subprocess, and its output
folder comes back as a mapping of file names to text, wherever it ran.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Iterator

from oracles.outcome import RunResult
from reducer.errors import USAGE, ReducerError
from reducer.workers.sandbox import Limits, Sandbox
from reducer.workers.scratch import folder as scratch_folder, remove as remove_scratch

WARM_MODULES = ("numpy", "jax", "jax.numpy", "jax.scipy.special", "jax.scipy.linalg", "enzyme_ad.jax")
REDUCED_FILES = ("repro.py", "report.md", "signature.json", "env.json", "reduce.log", "repro.mlir",
                 "pipeline.txt", "repro_mlir.py")


def reduce_program(source: str, oracle: str, max_time: float, jobs: int, platform: str) -> dict:
    """`reducer reduce` on `source` in a scratch folder; its output files and JSON summary."""
    scratch = scratch_folder("reducer-hunt-")
    try:
        script = scratch / "finding.py"
        script.write_text(source)
        out = scratch / "reduced"
        done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", str(script), "--out", str(out),
                               "--oracle", oracle, "--json", "--jobs", str(jobs), "--platform", platform,
                               "--max-time", str(max_time), "--stall", str(max(30.0, max_time / 4))],
                              capture_output=True, text=True, cwd=scratch, stdin=subprocess.DEVNULL)
        lines = done.stdout.strip().splitlines()
        try:
            summary = json.loads(lines[-1]) if lines else {}
        except ValueError:
            summary = {}
        summary["status"] = done.returncode
        if done.returncode not in (0, 130) and not summary.get("final_tokens"):
            summary["error"] = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:300]
        files = {name: (out / name).read_text() for name in REDUCED_FILES if (out / name).is_file()}
        return {"summary": summary, "files": files}
    finally:
        remove_scratch(scratch)


class LocalExecutor:
    """Probes in warm sandbox workers, `jobs` at a time; reductions one after another."""

    name = "local"

    def __init__(self, jobs: int, platform: str, limits: Limits):
        self.jobs, self.platform, self.limits = max(1, jobs), platform, limits
        self.stop = threading.Event()
        self.root = scratch_folder("reducer-hunt-")
        self.sandbox = Sandbox(self.root / "runs", script_name="probe.py", platform=platform, warm=True,
                               warm_modules=WARM_MODULES)

    def run(self, sources: list[str]) -> Iterator[tuple[int, RunResult]]:
        cancel = self.stop
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = {pool.submit(self.sandbox.run, src, self.limits, cancel): i for i, src in enumerate(sources)}
            try:
                for fut in as_completed(futures):
                    yield futures[fut], fut.result()
            finally:
                cancel.set()
                for fut in futures:
                    fut.cancel()

    def reduce(self, source: str, oracle: str, max_time: float) -> dict:
        return reduce_program(source, oracle, max_time, self.jobs, self.platform)

    def interrupt(self) -> None:
        self.stop.set()
        self.sandbox.kill_all()

    def close(self) -> None:
        self.sandbox.close()
        remove_scratch(self.root)


def _probe_task(source: str, platform: str, limits: dict) -> dict:
    """One probe in a fresh interpreter on a Ray worker (no warm worker outlives a task)."""
    root = scratch_folder("reducer-hunt-")
    sandbox = Sandbox(root, script_name="probe.py", platform=platform, warm=False)
    try:
        return dataclasses.asdict(sandbox.run(source, Limits(**limits)))
    finally:
        sandbox.close()
        remove_scratch(root)


#: what a remote Ray cluster's workers need of this project: the `reducer` and `oracles` packages
RAY_MODULES = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "oracles")]


def import_ray():
    """Ray, or a one-line error saying how to get it."""
    try:
        import ray
    except ImportError:
        raise ReducerError("--executor ray needs Ray: pip install 'reducer[ray]' (or pip install ray)", USAGE) from None
    return ray


class RayExecutor:
    """Probes and reductions as Ray tasks on the cluster at RAY_ADDRESS, or on a local one."""

    name = "ray"

    def __init__(self, jobs: int, platform: str, limits: Limits, address: str | None = None):
        ray = self.ray = import_ray()
        self.platform, self.limits, self.jobs = platform, limits, max(1, jobs)
        address = address or os.environ.get("RAY_ADDRESS") or None
        self.started = not ray.is_initialized()
        if self.started:
            env = {"py_modules": RAY_MODULES} if address else None
            ray.init(address=address, runtime_env=env, include_dashboard=False, log_to_driver=False,
                     **({} if address else {"num_cpus": self.jobs}))
        gpu = {"num_gpus": 1} if platform == "gpu" else {}
        self._probe = ray.remote(num_cpus=1, **gpu)(_probe_task)
        self._reduce = ray.remote(num_cpus=1, **gpu)(reduce_program)
        self.pending: list = []

    def run(self, sources: list[str]) -> Iterator[tuple[int, RunResult]]:
        limits = dataclasses.asdict(self.limits)
        refs = {self._probe.remote(src, self.platform, limits): i for i, src in enumerate(sources)}
        self.pending = list(refs)
        while self.pending:
            done, self.pending = self.ray.wait(self.pending, num_returns=1)
            for ref in done:
                yield refs[ref], RunResult(**self.ray.get(ref))

    def reduce(self, source: str, oracle: str, max_time: float) -> dict:
        return self.ray.get(self._reduce.remote(source, oracle, max_time, 1, self.platform))

    def interrupt(self) -> None:
        for ref in self.pending:
            self.ray.cancel(ref, force=True)

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def make_executor(kind: str, jobs: int, platform: str, limits: Limits) -> LocalExecutor | RayExecutor:
    if kind == "local":
        return LocalExecutor(jobs, platform, limits)
    if kind == "ray":
        return RayExecutor(jobs, platform, limits)
    raise ReducerError(f"--executor must be local or ray, not {kind!r}", USAGE)

