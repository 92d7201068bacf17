"""Benchmark of the IR level on failures of XLA itself: reduce each case and print a table against
the hand-made minima.

    python benchmarks/xla/bench_xla.py [--only NAME] [--max-time S] [--keep DIR]

The cases are the modules in `cases/` (each written by the program of the same name in
`programs/`, `python programs/NAME.py cases/NAME.mlir`, with jax/jaxlib 0.10.2 on the CPU) and, for
each `programs/*_dump.py`, the XLA dump folder that program leaves when run with
`XLA_FLAGS=--xla_dump_to=DIR` (made afresh in a temporary folder). Every case runs through the real
command line (`reducer reduce … --json`); sizes are operations as the IR level counts them, and the
ratio is reduced / minimum (`minimal/NAME.mlir`). The last column is the HLO pass whose removal
makes the failure go away, as the reduction found it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from reducer.levels.mlir.representation import MlirModule

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))


def operations(text: str) -> int:
    from reducer.levels.mlir import ir_worker

    return MlirModule(worker=ir_worker.shared()).size(text)


def dump_folder(program: Path, into: Path) -> Path:
    folder = into / program.stem
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={folder}"}
    subprocess.run([sys.executable, str(program)], env=env, capture_output=True, timeout=600)
    return folder


def cases(only: str | None, scratch: Path) -> list[tuple[str, Path]]:
    found = [(p.stem, p) for p in sorted((HERE / "cases").glob("*.mlir"))]
    found += [(p.stem, dump_folder(p, scratch)) for p in sorted((HERE / "programs").glob("*_dump.py"))
              if not only or p.stem == only]
    return [(name, path) for name, path in found if not only or name == only]


def reduce(path: Path, out: Path, max_time: float) -> tuple[dict, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", str(path), "--out", str(out), "--json",
                           "--quiet", "--max-time", str(max_time)], capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - start
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), seconds
    except (ValueError, IndexError):
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}, seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only")
    ap.add_argument("--max-time", type=float, default=120.0)
    ap.add_argument("--keep", type=Path, help="keep each reduction's output folder here")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-xla-") as tmp:
        scratch = Path(tmp)
        keep = args.keep or scratch / "out"
        for name, path in cases(args.only, scratch):
            result, seconds = reduce(path, keep / name, args.max_time)
            minimum = operations((HERE / "minimal" / f"{name}.mlir").read_text())
            if "final_ops" not in result:
                rows.append((name, "-", "-", "-", minimum, "-", f"{seconds:.0f}", str(result.get("error"))))
                continue
            sig = result["signature"]
            fields = dict(sig.get("fields", []))
            culprit = (result.get("xla_pass") or {}).get("pass") or "none"
            rows.append((name, sig["family"] + (f" ({fields.get('how')}, {fields.get('phase')})" if fields.get("how")
                                                else ""),
                         result["original_ops"], result["final_ops"], minimum,
                         f"{result['final_ops'] / minimum:.2f}", f"{seconds:.0f}", culprit))
    header = ("case", "failure", "ops before", "ops after", "minimum", "ratio", "seconds", "culprit pass")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
