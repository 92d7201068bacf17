"""Benchmark of the IR level: dump the modules Enzyme-JAX writes when its pipeline fails, reduce
each, and print a table.

    python benchmarks/bench_mlir.py [--cases DIR] [--programs DIR ...] [--only NAME] [--max-time S]

Every `*.py` program of the case folders (by default benchmarks/cases/ and the project's
tests/programs/) runs once with TMPDIR in a fresh folder; a program whose pipeline fails leaves
`Enzyme MLIR dumped to …` on stderr and the module in that folder. A program that crashes or fails
otherwise runs with `enzyme_call.run_pass_pipeline` wrapped to write each module it is given
(`reducer.levels.mlir.script_module`): the module a crash died in, or the last one differentiated in
reverse mode (for a wrong gradient; the IR level then checks it against finite differences).
Programs that leave no module are listed with the reason (they run cleanly, or fail outside the
pipeline without differentiating in reverse mode). Plain modules from tests/data/mlir/ (made by running programs) are reduced too. The
table shows operations and pipeline passes before and after, seconds, candidates tested and
candidates per second.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reducer.levels.mlir import script_module  # noqa: E402
from reducer.levels.mlir.module_job import MlirOptions, MlirReduction  # noqa: E402


def dump(program: Path, timeout: float = 600.0) -> tuple[str | None, str]:
    """The module Enzyme-JAX's pipeline ran for `program` (its own dump, or for a crash or a wrong
    gradient the one `script_module.CAPTURE` wrote), or None and why not."""
    with tempfile.TemporaryDirectory(prefix="bench-mlir-") as tmp:
        script = Path(tmp) / program.name
        script.write_text(script_module.with_capture(program.read_text()))
        try:
            done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp,
                                  env=dict(os.environ, TMPDIR=tmp, JAX_PLATFORMS="cpu", PYTHONPATH=str(program.parent)),
                                  timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, "timed out"
        chosen = script_module.chosen(done.stderr, done.returncode < 0) if done.returncode != 0 else None
        if chosen is not None:
            return chosen.read_text(), ""
        if done.returncode < 0:
            return None, f"killed by signal {-done.returncode}, no dump"
        if done.returncode == 0:
            return None, "runs cleanly"
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"fails outside the pipeline: {last[:80]}"


def reduce(name: str, text: str, out: Path, max_time: float | None) -> dict:
    options = MlirOptions(max_time=max_time, verify_runs=1, full_outputs=False)
    job = MlirReduction(text, name, out / name, options)
    try:
        return job.run()
    finally:
        job.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, nargs="*", default=[ROOT / "benchmarks" / "cases",
                                                                ROOT / "tests" / "programs"])
    ap.add_argument("--modules", type=Path, default=ROOT / "tests" / "data" / "mlir")
    ap.add_argument("--only", default=None, help="only inputs whose name contains this")
    ap.add_argument("--max-time", type=float, default=300.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-mlir-out-"))
    inputs: list[tuple[str, str | None, str]] = []
    for folder in args.cases:
        for program in sorted(folder.glob("*.py")):
            if args.only and args.only not in program.stem:
                continue
            if "enzyme" not in program.read_text():
                continue
            text, why = dump(program)
            inputs.append((f"{program.stem} (dump)", text, why))
    for module in sorted(args.modules.glob("*.mlir")):
        if args.only and args.only not in module.stem:
            continue
        inputs.append((module.name, module.read_text(), ""))
    rows = []
    for name, text, why in inputs:
        if text is None:
            rows.append((name, why))
            continue
        start = time.monotonic()
        try:
            r = reduce(re.sub(r"\W+", "_", name).strip("_"), text, out, args.max_time)
        except Exception as exc:
            rows.append((name, f"{type(exc).__name__}: {str(exc)[:80]}"))
            continue
        rows.append((name, r, time.monotonic() - start))
        print(f"{name}: {r['original_ops']} -> {r['final_ops']} ops ({', '.join(r['ops'])}), "
              f"{r['original_passes']} -> {r['final_passes']} passes, {r['tested']} candidates, "
              f"{r['per_second']}/s, {r['isolation']}; verified: {r['verified']}", file=sys.stderr, flush=True)
    print()
    print(f"| {'input':38} | kind   | ops before | ops after | passes before | passes after | seconds | candidates "
          f"| cand/s | candidates run in | verified |")
    print(f"|{'-' * 40}|--------|-----------:|----------:|--------------:|-------------:|--------:|-----------:"
          f"|-------:|-------------------|----------|")
    for row in rows:
        if len(row) == 2:
            print(f"| {row[0]:38} | —      | {row[1]} |")
            continue
        name, r, seconds = row
        print(f"| {name:38} | {r['kind']:6} | {r['original_ops']:10} | {r['final_ops']:9} | {r['original_passes']:13} "
              f"| {r['final_passes']:12} | {seconds:7.1f} | {r['tested']:10} | {r['per_second']:6.1f} "
              f"| {r['isolation']:17} | {r['verified'].split(' (')[0]:8} |")
    print(f"\noutputs in {out}")


if __name__ == "__main__":
    main()
