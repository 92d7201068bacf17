"""Benchmark of the forms users run code in: reduce the suite, notebook and flagged-script cases of
`suites/` and `forms/` side by side, and print a table against their hand-made minima.

    python benchmarks/bench_forms.py [--only NAME] [--max-time S]

Each case runs through the real command line (`reducer reduce INPUT --json --quiet`), from a copy
of its folder (the outputs land beside it, the benchmark's files are only read); sizes are Python
tokens of the reduced `repro.py` (`measure.py`), which is then re-checked to reproduce.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: case, the folder copied, the input inside the copy, the arguments after `--`
CASES = [
    ("equinox_param_newton_norm", "suites/equinox_param_newton_norm",
     "test_norms.py::test_training_lowers_loss[16-newton]", []),
    ("flax_linen_absl_huber_tracer", "suites/flax_linen_absl_huber_tracer",
     "test_losses.py::LossTest::test_training_reduces_loss_huber", []),
    ("flax_notebook_onehot_jit", "forms", "flax_notebook_onehot_jit.ipynb", []),
    ("equinox_rbf_flags_nan", "forms", "equinox_rbf_flags_nan/train.py",
     ["--data", "equinox_rbf_flags_nan/data.npz", "--centers", "8", "--steps", "20", "--lr", "0.01"]),
]


def tokens(case: str, repro: Path) -> tuple[int, int, bool]:
    """(tokens of repro, tokens of the minimum, whether repro still reproduces), from measure.py's
    line `CASE: tokens=N minimal=M ratio=R reproduces=yes`."""
    done = subprocess.run([sys.executable, str(HERE / "measure.py"), case, str(repro), "--check"],
                          capture_output=True, text=True, cwd=repro.parent, env={**os.environ, "PY": sys.executable})
    fields = dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)
    return int(fields["tokens"]), int(fields["minimal"]), fields.get("reproduces") == "yes"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only")
    ap.add_argument("--max-time", type=float, default=180.0)
    args = ap.parse_args()
    rows = []
    for case, folder, given, argv in CASES:
        if args.only and case != args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="bench-forms-") as tmp:
            work = Path(tmp) / "work"
            shutil.copytree(HERE / folder, work)
            out = Path(tmp) / "out"
            start = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", given, "--out", str(out), "--json",
                                   "--quiet", "--max-time", str(args.max_time), *(["--", *argv] if argv else [])],
                                  capture_output=True, text=True, cwd=work)
            seconds = time.monotonic() - start
            try:
                result = json.loads(done.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                rows.append((case, "-", "-", "-", "-", f"{seconds:.0f}", (done.stderr.strip().splitlines() or ["?"])[-1]))
                continue
            reduced, minimum, ok = tokens(case, out / "repro.py")
            rows.append((case, result.get("original_tokens", "-"), reduced, minimum, f"{reduced / minimum:.2f}",
                         f"{seconds:.0f}", "yes" if ok else "NO"))
    header = ("case", "original tokens", "reduced tokens", "minimum tokens", "ratio", "seconds", "reproduces")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
