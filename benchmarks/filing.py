"""Benchmark of what a maintainer is handed (issue 35): for failures of XLA, reduce each input from
the user's side (a script, the same script as a notebook and as a pytest test id, a module) and
print a table of what was filed: the family, the lines of `report.md` above its `<details>` and in
all, the lines of `repro.py`, the culprit HLO pass, whether the tool confirmed that disabling it
makes the reproducer pass, where it is sent, and the seconds.

    python benchmarks/filing.py [--only NAME] [--max-time S] [--keep DIR] [--reports DIR ...]

`--reports` also reads every `report.md` under each folder given (the corpus, a benchmark's
`--keep` folder) and lists those longer than 80 lines above their `<details>` or that show a
signature's normalisation placeholder (`<q>`, `<aval>`, `N` for a number) outside its signature lines.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the scripts whose failure is XLA's, from the benchmark (cases/)
SCRIPTS = ("sensor_quantise_magic_round_jit", "equinox_moments_rank7_segfault", "flax_linen_pointcloud_jit_miscompare")
#: the script also given as a notebook and as a pytest test id (issue 35, item 5)
FORMS_OF = "sensor_quantise_magic_round_jit"
#: limits a report and a module's reproducer are held to
ABOVE_DETAILS, MODULE_REPRO = 80, 40
#: a signature as the tool writes it (`family: field=value ...`), in its own line or a table's cell
SIGNATURE = re.compile(r"(^|[\s|`])[a-z][a-z-]*: [a-z][a-z-]*=")
PLACEHOLDER = re.compile(r"<q>|<aval>|\brtol=N\b|\batol=N\b|\(N\)|\bN\b(?= (?:elements|of|bytes))")


def notebook(script: Path, into: Path) -> Path:
    """The script as a notebook: one cell per top-level statement, `main()` called in the last."""
    tree = ast.parse(script.read_text())
    body = [s for s in tree.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    cells = [ast.unparse(s) if not (isinstance(s, ast.If) and "__main__" in ast.unparse(s.test))
             else "\n".join(ast.unparse(t) for t in s.body) for s in body]
    doc = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                      "source": text.splitlines(keepends=True)} for text in cells],
           "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path = into / f"{script.stem}.ipynb"
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_id(script: Path, into: Path) -> str:
    """The script as a module a test imports, and the id of that test."""
    (into / f"{script.stem}.py").write_text(script.read_text())
    test = into / f"test_{script.stem}.py"
    test.write_text(f"from {script.stem} import main\n\n\ndef test_main():\n    main()\n")
    return f"{test}::test_main"


def inputs(only: str | None, scratch: Path) -> list[tuple[str, str, str]]:
    """(name, form, what `reducer reduce` is given)."""
    found = [(name, "script", str(ROOT / "benchmarks" / "cases" / f"{name}.py")) for name in SCRIPTS]
    script = ROOT / "benchmarks" / "cases" / f"{FORMS_OF}.py"
    (scratch / "nb").mkdir()
    (scratch / "tests").mkdir()
    found.append((FORMS_OF, "notebook", str(notebook(script, scratch / "nb"))))
    found.append((FORMS_OF, "test id", test_id(script, scratch / "tests")))
    found += [(p.stem, "module", str(p)) for p in sorted((HERE / "xla" / "cases").glob("*.mlir"))]
    return [row for row in found if not only or row[0] == only]


def above_details(report: str) -> int:
    lines = report.splitlines()
    return next((k for k, line in enumerate(lines) if line.startswith("<details>")), len(lines))


def placeholders(report: str) -> list[str]:
    """Normalisation placeholders outside the signature's own lines (those name the signature)."""
    shown = [line for line in report.splitlines() if not SIGNATURE.search(line)]
    return sorted({m.group(0) for line in shown for m in PLACEHOLDER.finditer(line)})


def reduce(given: str, out: Path, max_time: float) -> tuple[dict, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", given, "--out", str(out), "--json",
                           "--quiet", "--max-time", str(max_time)], capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - start
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), seconds
    except (ValueError, IndexError):
        return {"error": " ".join((done.stderr or done.stdout).strip().splitlines()[-1:])}, seconds


def row(name: str, form: str, result: dict, out: Path, seconds: float) -> tuple:
    if "signature" not in result:
        return (name, form, "-", "-", "-", "-", "-", "-", "-", f"{seconds:.0f}", str(result.get("error"))[:80])
    report = (out / "report.md").read_text() if (out / "report.md").exists() else ""
    repro = (out / "repro.py").read_text() if (out / "repro.py").exists() else ""
    culprit = (result.get("xla_pass") or {}).get("pass") or "none"
    confirmed = "yes" if culprit != "none" and f"--xla_disable_hlo_passes={culprit}" in report and (
        "runs through" in report or "runs cleanly" in report) else "no"  # the tool's words for runs it made
    tracker = re.search(r"https://github\.com/([\w.-]+/[\w.-]+)/issues/new", report)
    return (name, form, result["signature"]["family"], above_details(report), len(report.splitlines()),
            len(repro.splitlines()), culprit, confirmed, tracker.group(1) if tracker else "-", f"{seconds:.0f}",
            ", ".join(placeholders(report)) or "none")


def check_reports(folders: list[Path]) -> int:
    """Print the reports that break a limit; the number of them."""
    bad = 0
    reports = sorted(p for folder in folders for p in folder.rglob("report.md"))
    for path in reports:
        text = path.read_text()
        module = (path.parent / "repro.mlir").exists() or (path.parent / "original.mlir").exists()
        repro = path.parent / "repro.py"
        repro_lines = len(repro.read_text().splitlines()) if repro.exists() else 0
        faults = [f"{above_details(text)} lines above <details>"] if above_details(text) > ABOVE_DETAILS else []
        faults += [f"placeholders {placeholders(text)}"] if placeholders(text) else []
        faults += [f"module repro.py of {repro_lines} lines"] if module and repro_lines > MODULE_REPRO else []
        if faults:
            bad += 1
            print(f"{path}: " + "; ".join(faults))
    longest = max((above_details(p.read_text()) for p in reports), default=0)
    print(f"{len(reports)} reports read, {bad} over a limit; the longest has {longest} lines above <details>")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only")
    ap.add_argument("--max-time", type=float, default=180.0)
    ap.add_argument("--keep", type=Path, help="keep each reduction's output folder here")
    ap.add_argument("--reports", type=Path, nargs="*", default=[], help="folders whose report.md files to read")
    ap.add_argument("--no-reduce", action="store_true", help="only read the reports")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-filing-") as tmp:
        scratch = Path(tmp)
        keep = args.keep or scratch / "out"
        for name, form, given in ([] if args.no_reduce else inputs(args.only, scratch)):
            out = keep / f"{name}-{form.replace(' ', '-')}"
            result, seconds = reduce(given, out, args.max_time)
            rows.append(row(name, form, result, out, seconds))
            print(f"{name} ({form}): {seconds:.0f} s", file=sys.stderr, flush=True)
    header = ("case", "input", "family", "report lines above <details>", "report lines", "repro.py lines",
              "culprit pass", "pass confirmed", "sent to", "seconds", "placeholders")
    if rows:
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        for cells in rows:
            print("| " + " | ".join(str(c) for c in cells) + " |")
    return 1 if args.reports and check_reports(args.reports) else 0


if __name__ == "__main__":
    sys.exit(main())
