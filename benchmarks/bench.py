#!/usr/bin/env python3
"""Benchmark: reduce every case of the benchmark and tabulate size, ratio, time, candidates.

usage: python benchmarks/bench.py [--bench DIR] [--jobs N] [--only NAME ...] [--levels L] [--args ARGS] [--out FILE]

The cases are benchmarks/cases/*.py with their hand-made minima in benchmarks/minimal/ (--bench DIR
takes another folder of the same layout, e.g. ../shared/bench); a case that is a pytest module names
the test reduced (its node id) on a line `# node: test_name`.

Each case is reduced by `reducer reduce` with default options (plus --jobs, and --levels when
given, e.g. `--levels source` to compare against the default choice of levels, and any other
options given in --args, e.g. `--args '--pass-order yield'`), then measured with
the benchmark's own `measure.py CASE repro.py --check` (its naive text test, run with this
interpreter). The write-back column says how the traced level's result came back as a script (public
calls or bound primitives), "failed" when no written-back form reproduced, "not smaller" when the one
that did was larger than the program. Writes a markdown
table to --out (default: stdout). Timings are noisy on shared
machines: compare figures from one run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE  # cases/, minimal/, measure.py and interesting.sh live next to this file


#: a case that is a test module names the test to reduce on a line of its own: `# node: test_name`
NODE = re.compile(r"^# node: (\w+)", re.M)


def reduce_case(case: Path, out: Path, jobs: int, levels: str | None = None, args: str = "") -> dict:
    start = time.monotonic()
    extra = (["--levels", levels] if levels else []) + shlex.split(args)
    node = NODE.search(case.read_text())
    target = f"{case}::{node[1]}" if node else str(case)
    done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", target, "--out", str(out), "--json",
                           "--jobs", str(jobs), *extra], capture_output=True, text=True, cwd=out.parent)
    wall = time.monotonic() - start
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        out.parent.joinpath(f"{out.name}.stderr").write_text(done.stderr)  # the whole of it, beside the folder
    result["wall"] = wall
    return result


def measure(bench: Path, name: str, repro: Path) -> dict:
    env = dict(os.environ, PY=sys.executable)
    done = subprocess.run([sys.executable, str(bench / "measure.py"), name, str(repro), "--check"],
                          capture_output=True, text=True, env=env)
    m = re.search(r"tokens=(\d+) minimal=(\d+) ratio=([\d.]+) reproduces=(\w+)", done.stdout)
    return {"tokens": int(m[1]), "minimal": int(m[2]), "ratio": float(m[3]), "reproduces": m[4]} if m else {}


def write_back(out: Path) -> str:
    """How the traced level's result came back, from reduce.log: the form used, "failed" (a write-back
    that did not reproduce: a bug to count), or "-" when the traced level did not get that far."""
    try:
        log = (out / "reduce.log").read_text()
    except OSError:
        return "?"
    used = re.search(r"jaxpr level: written back .*verified: yes \(.*?, (public|primitives)", log)
    if used:
        return "public calls" if used[1] == "public" else "bound primitives"
    tries = re.findall(r"written-back script \((public calls|bound primitives)\) showed the failure in (\d+/\d+)", log)
    if tries:
        return "failed (" + ", ".join(f"{form} {runs}" for form, runs in tries) + ")"
    larger = re.search(r"the written-back script \((\d+) tokens\) is not smaller", log)
    return f"not smaller ({larger[1]} tokens)" if larger else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--levels", help="passed on to reducer reduce (default: its own choice)")
    ap.add_argument("--args", default="", help="more options for reducer reduce, as one string")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--keep", type=Path, help="keep the output folders here")
    args = ap.parse_args()
    cases = sorted((args.bench / "cases").glob("*.py"))
    if args.only:
        cases = [c for c in cases if c.stem in args.only]
    rows = ["| case | original | reduced | minimal | ratio | reproduces | verified | levels | write-back | seconds "
            "| candidates | per s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    work = args.keep or Path(tempfile.mkdtemp(prefix="reducer-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    for case in cases:
        out = work / f"reduced-{case.stem}"
        r = reduce_case(case, out, args.jobs, args.levels, args.args)
        m = measure(args.bench, case.stem, out / "repro.py") if (out / "repro.py").exists() else {}
        tested = r.get("tested", 0)
        rows.append(f"| {case.stem} | {r.get('original_tokens', '?')} | {m.get('tokens', '?')} | {m.get('minimal', '?')} "
                    f"| {m.get('ratio', '?')} | {m.get('reproduces', '?')} | {str(r.get('verified', r.get('error')))[:20]} "
                    f"| {'+'.join(r.get('levels', [])) or '?'} | {write_back(out)} | {r['wall']:.0f} | {tested} "
                    f"| {tested / r['wall']:.2f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    table = "\n".join(rows) + "\n"
    if args.out:
        args.out.write_text(table)
    print(table)


if __name__ == "__main__":
    main()
