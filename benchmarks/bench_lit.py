"""Benchmark of `reducer reduce FILE.mlir` on modules written by others: every `.mlir` file of a
folder (for instance the `test/lit_tests/` folder of an Enzyme-JAX checkout), as a new user would
run it, and a table of what happened to each module.

    python benchmarks/bench_lit.py FOLDER [--max-time S] [--every N] [--limit N] [--only SUBSTRING] [--json FILE]
                                         [--start I] [--stop J] [--jsonl FILE]
    python benchmarks/bench_lit.py --totals FILE.jsonl ...

A long run can be split: `--start`/`--stop` take a slice of the module list, `--jsonl` appends each
row as it is made (so an interrupted run loses nothing), and `--totals` tabulates the rows of several
such files as one run.

A lit test file holds one module, or several separated by `// -----` lines (`--split-input-file`):
each is a module of its own. The pipeline of the file's first `// RUN:` line
(`--pass-pipeline="builtin.module(…)"`, or the pass flags of `enzymexlamlir-opt`, `--enzyme-hlo-opt`,
`--canonicalize=…`) becomes the module's first-line comment, the format of Enzyme-JAX's dumps. Each
module is then reduced by the `reducer` command in a subprocess (at most `--max-time` seconds of
reduction, killed after twice that) and reported as

- reduced: operations and pipeline passes before and after, seconds;
- accepted: read, but not reduced (it does not fail: exit 6; or fails otherwise: 7 …), with the reason;
- refused: exit 9, with the reason, and whether enzyme-ad itself refuses the module;
- crashed: the tool died by a signal, or was killed at the limit.

Totals close the table.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPLIT = re.compile(r"^// -----\s*$", re.M)
RUN = re.compile(r"^//\s*RUN:\s*(?P<cmd>.*)$", re.M)
#: opt flags that are not passes
NOT_PASSES = {"split-input-file", "allow-unregistered-dialect", "verify-diagnostics", "verify-each", "mlir-print-ir-after-all",
              "mlir-print-debuginfo", "mlir-print-op-generic", "mlir-print-local-scope", "o", "debug", "debug-only"}
ENZYME_PARSE = ("import sys\nfrom reducer.levels.mlir.text import enzyme_parse_error\n"
                "print(enzyme_parse_error(sys.stdin.read()) or '')\n")


def run_pipeline(text: str) -> str | None:
    """The pass pipeline of the first RUN line, in textual form; None when it has none."""
    m = RUN.search(text)
    if not m:
        return None
    command = m.group("cmd").split("|")[0]
    try:
        words = shlex.split(command.replace("%s", ""))
    except ValueError:
        return None
    passes = []
    for word in words[1:]:
        if not word.startswith("-"):
            continue
        name, _, value = word.lstrip("-").partition("=")
        if name == "pass-pipeline":
            value = value.strip("'\"")
            inner = re.fullmatch(r"builtin\.module\((.*)\)", value, re.S)
            passes.append(inner.group(1) if inner else value)
        elif name not in NOT_PASSES and not name.startswith("mlir-"):
            passes.append(f"{name}{{{value.strip(chr(34))}}}" if value else name)
    return ",".join(p for p in passes if p) or None


def modules_of(path: Path) -> list[tuple[str, str]]:
    """(name, program) of each module of a file, with its RUN pipeline as the first line."""
    text = path.read_text(encoding="utf-8", errors="replace")
    pipeline = run_pipeline(text)
    parts = SPLIT.split(text) if "split-input-file" in text else [text]
    out = []
    for k, part in enumerate(parts):
        body = "\n".join(line for line in part.splitlines() if not line.lstrip().startswith("// RUN:"))
        if not body.strip():
            continue
        name = path.name if len(parts) == 1 else f"{path.name}#{k}"
        out.append((name, (f"// {pipeline}\n" if pipeline else "") + body.strip("\n") + "\n"))
    return out


def enzyme_refuses(program: str) -> str:
    """Why enzyme-ad 0.0.16's own parser refuses the module ("" when it reads it), in a subprocess."""
    module = program.split("\n", 1)[1] if program.startswith("// ") else program
    try:
        done = subprocess.run([sys.executable, "-c", ENZYME_PARSE], input=module, capture_output=True, text=True,
                              cwd=ROOT, timeout=300)
    except subprocess.TimeoutExpired:
        return "enzyme-ad's parser hangs"
    if done.returncode:
        return f"enzyme-ad's parser dies (status {done.returncode})"
    return done.stdout.strip()


def reduce_one(name: str, program: str, max_time: float, work: Path) -> dict:
    src = work / (re.sub(r"[^\w.-]", "_", name.replace(".mlir", "")) + ".mlir")
    src.write_text(program, encoding="utf-8")
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", str(src), "--out", str(work / f"{src.stem}-out"),
                               "--json", "--max-time", str(max_time), "--jobs", "1"], capture_output=True, text=True,
                              cwd=ROOT, timeout=2 * max_time + 180, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"module": name, "outcome": "crashed", "reason": f"killed after {2 * max_time + 180:.0f} s"}
    seconds = round(time.monotonic() - start, 1)
    last = re.sub(r"^reducer: [^:]+: ", "", (done.stderr.strip().splitlines() or [""])[-1])[:200]
    if done.returncode < 0:
        return {"module": name, "outcome": "crashed", "reason": f"signal {-done.returncode}: {last}", "seconds": seconds}
    if done.returncode == 9:
        return {"module": name, "outcome": "refused", "reason": last.replace("not a valid MLIR module: ", ""),
                "enzyme_ad": enzyme_refuses(program) or "accepts it", "seconds": seconds}
    if done.returncode == 0:
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        return {"module": name, "outcome": "reduced", "ops": [summary["original_ops"], summary["final_ops"]],
                "passes": [summary["original_passes"], summary["final_passes"]], "seconds": seconds,
                "verified": summary.get("verified", "")}
    return {"module": name, "outcome": "accepted", "reason": f"exit {done.returncode}: {last}", "seconds": seconds}


def row(r: dict) -> str:
    if r["outcome"] == "reduced":
        what = f"{r['ops'][0]} -> {r['ops'][1]} ops, {r['passes'][0]} -> {r['passes'][1]} passes"
    elif r["outcome"] == "refused":
        what = f"{r['reason']} (enzyme-ad: {r['enzyme_ad']})"
    else:
        what = r.get("reason", "")
    return f"| {r['module']} | {r['outcome']} | {what.replace('|', '/')} | {r.get('seconds', '')} |"


def totals_line(rows: list[dict]) -> tuple[dict, str]:
    totals = {k: sum(1 for r in rows if r["outcome"] == k) for k in ("reduced", "accepted", "refused", "crashed")}
    enzyme_too = sum(1 for r in rows if r["outcome"] == "refused" and r["enzyme_ad"] != "accepts it")
    return totals, (f"{len(rows)} modules: " + ", ".join(f"{v} {k}" for k, v in totals.items())
                    + f"; of the refused, enzyme-ad refuses {enzyme_too} too")


def summarize(files: list[Path]) -> int:
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    print("| module | outcome | detail | seconds |\n|---|---|---|---|")
    for r in rows:
        print(row(r))
    print("\n" + totals_line(rows)[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--max-time", type=float, default=60.0, help="seconds of reduction per module")
    ap.add_argument("--limit", type=int, default=0, help="at most this many modules")
    ap.add_argument("--only", default="", help="only files whose name contains this")
    ap.add_argument("--every", type=int, default=1, help="only every N-th module (a sample of a large folder)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("--start", type=int, default=0, help="skip the modules before this index of the list")
    ap.add_argument("--stop", type=int, default=None, help="stop before this index of the list")
    ap.add_argument("--jsonl", type=Path, help="append each row to this file as a JSON line as soon as it is made")
    ap.add_argument("--totals", type=Path, nargs="+", help="tabulate the rows of these --jsonl files and stop")
    args = ap.parse_args(argv)
    if args.totals:
        return summarize(args.totals)
    if args.folder is None or not args.folder.is_dir():
        print(f"{args.folder}: not a folder", file=sys.stderr)
        return 2
    modules = [m for f in sorted(args.folder.rglob("*.mlir")) if args.only in f.name for m in modules_of(f)]
    modules = modules[::max(1, args.every)]
    modules = modules[:args.limit] if args.limit else modules
    modules = modules[args.start:args.stop]
    rows = []
    print("| module | outcome | detail | seconds |\n|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-lit-") as tmp:
        for name, program in modules:
            rows.append(reduce_one(name, program, args.max_time, Path(tmp)))
            print(row(rows[-1]), flush=True)
            if args.jsonl:
                with args.jsonl.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(rows[-1]) + "\n")
    totals, line = totals_line(rows)
    print("\n" + line)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "totals": totals}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
