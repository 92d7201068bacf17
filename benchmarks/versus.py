#!/usr/bin/env python3
"""Benchmark: reducer side by side with Shrink Ray and pysource-minimize on the benchmark cases.

usage: python benchmarks/versus.py [--cases a,b] [--tools reducer,shrinkray,pysource-minimize] [--recheck OUT]
                                   [--jobs 2] [--cap SECONDS] [--out DIR]

Run it with the project's interpreter (the one with jax, e.g. `.venv/bin/python`), after
`pip install -e '.[enzyme,bench]'`. For every case of benchmarks/cases/ (or those named by
--cases) each tool reduces a copy of the case in OUT/CASE/TOOL/, one tool at a time:

- reducer: `reducer reduce` with its own oracle (auto), `--jobs N`; candidates are the `tested`
  count of its JSON summary (or of state.json when it was stopped hard);
- Shrink Ray: `shrinkray --parallelism N --no-llm --ui basic` in a Python 3.12 venv of its own
  (default benchmarks/.venv-shrinkray, made on first use from `python3.12`), editing the file in
  place;
- pysource-minimize: its `minimize(source, checker)` API in a driver (this file, run as
  `versus.py _pysource FILE TEST`) whose checker runs the test; it is sequential, whatever --jobs.

Shrink Ray and pysource-minimize get the same naive test: a wrapper that appends a line to a
counter file (candidates tested) and execs the benchmark's `interesting.sh CASE FILE` with PY set
to this interpreter. A tool still running after --cap seconds gets SIGTERM (reducer then writes
its best program so far), then SIGKILL after a grace period, and its best file so far is taken.
Each result is measured with the benchmark's `measure.py CASE FILE --check`: tokens, ratio to the
hand-reduced minimum, and whether the naive test still sees the failure. A result slipped when the
naive test no longer sees the failure, or when `reducer check` gives it another failure signature
than the original case (a file whose only line is the expected message, run as Python, passes
the naive test with a SyntaxError). Each tool's figures go to OUT/CASE/TOOL/result.json;
`--recheck OUT` builds the table again from them. Writes OUT/versus.md and prints it. Timings are noisy on shared machines: compare one run's rows.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import DEFAULT_BENCH, measure  # noqa: E402

TOOLS = ("reducer", "shrinkray", "pysource-minimize")
SHRINKRAY = "shrinkray==26.9.13.0"
# Shrink Ray's LLM passes are turned off (--no-llm); their packages build llama.cpp from source.
SHRINKRAY_SKIP = {"llama-cpp-python", "huggingface-hub"}
GRACE = 30.0  # seconds between SIGTERM and SIGKILL at the cap
MARK = "VERSUS_RUN"  # environment variable that tags every process a tool run starts


def fail(message: str) -> None:
    sys.exit(f"versus.py: {message}")


# -- the tools' installation ---------------------------------------------------------------
def find_python312() -> str:
    """A Python 3.12 interpreter: pyenv's, else `python3.12` on PATH when it runs."""
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    except OSError:
        root = ""
    found = sorted(Path(root, "versions").glob("3.12*/bin/python3.12")) if root else []
    if found:
        return str(found[-1])
    exe = shutil.which("python3.12")
    if exe and subprocess.run([exe, "--version"], capture_output=True).returncode == 0:
        return exe
    fail("Shrink Ray needs Python >= 3.12: no python3.12 on PATH or in pyenv (give --shrinkray-venv)")


def shrinkray_venv(venv: Path) -> Path:
    """The venv's shrinkray executable, installing Shrink Ray there first if needed."""
    exe = venv / "bin" / "shrinkray"
    if exe.exists():
        return exe
    print(f"installing {SHRINKRAY} into {venv} ...", file=sys.stderr, flush=True)
    python = venv / "bin" / "python"
    steps = [[find_python312(), "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "--no-deps", SHRINKRAY]]
    for step in steps:
        if subprocess.run(step).returncode:
            fail(f"could not install Shrink Ray: {' '.join(step)} failed")
    script = ("import re, importlib.metadata as m; print('\\n'.join(r for r in m.requires('shrinkray') "
              "if 'extra ==' not in r and re.split('[<>=!~; ]', r)[0].lower() not in %r))" % (SHRINKRAY_SKIP,))
    deps = subprocess.run([str(python), "-c", script], capture_output=True, text=True).stdout.split("\n")
    step = [str(python), "-m", "pip", "install", "-q", *[d for d in deps if d.strip()]]
    if subprocess.run(step).returncode or not exe.exists():
        fail("could not install Shrink Ray's dependencies")
    return exe


def versions(tools: list[str], shrinkray: Path | None) -> dict[str, str]:
    found = {}
    for tool in tools:
        if tool == "reducer":
            rev = subprocess.run(["git", "-C", str(HERE), "describe", "--always", "--dirty"], capture_output=True,
                                 text=True).stdout.strip()
            found[tool] = metadata.version("reducer") + (f" ({rev})" if rev else "")
        elif tool == "shrinkray":
            out = subprocess.run([str(shrinkray), "--version"], capture_output=True, text=True).stdout
            found[tool] = out.strip().split()[-1] if out.strip() else "?"
        else:
            found[tool] = metadata.version("pysource-minimize")
    return found


# -- running one tool ----------------------------------------------------------------------
def tagged_pids(token: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"{MARK}={token}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def run_capped(cmd: list[str], cwd: Path, env: dict, cap: float) -> tuple[float, bool]:
    """Run `cmd` in a session of its own, stopped at `cap` seconds; (wall seconds, cap hit). Every
    process it started (found by its environment tag) is killed afterwards."""
    token = uuid.uuid4().hex
    env = dict(env, **{MARK: token})
    start = time.monotonic()
    with open(cwd / "stdout.txt", "wb") as out, open(cwd / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
    capped = False
    try:
        proc.wait(cap)
    except subprocess.TimeoutExpired:
        capped = True
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.monotonic() - start
    for pid in tagged_pids(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return wall, capped


def counting_test(folder: Path, bench: Path, case: str) -> Path:
    """A test script that counts its calls in folder/count.txt and execs interesting.sh."""
    test = folder / "test.sh"
    test.write_text(f"#!/bin/bash\necho x >> '{folder / 'count.txt'}'\n"
                    f"PY='{sys.executable}' exec '{bench / 'interesting.sh'}' {case} \"$1\"\n")
    test.chmod(0o755)
    (folder / "count.txt").write_text("")
    return test


def counted(folder: Path) -> int:
    return len((folder / "count.txt").read_text().splitlines())


def progress(log: Path, started: float) -> list[tuple[float, int]]:
    """(seconds since `started`, tokens) of every step reducer's reduce.log records."""
    steps = []
    if log.exists():
        for m in re.finditer(r"^\[(\d\d):(\d\d):(\d\d)\] (\d+) tokens after ", log.read_text(), re.M):
            clock = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
            steps.append(((clock - started) % 86400, int(m[4])))
    return steps


def run_reducer(folder: Path, work: Path, jobs: int, cap: float, bench: Path, case: str) -> dict:
    out = folder / "out"
    cmd = [sys.executable, "-m", "reducer.cli", "reduce", str(work), "--out", str(out), "--json", "--jobs", str(jobs)]
    now = time.localtime()
    started = now.tm_hour * 3600 + now.tm_min * 60 + now.tm_sec
    wall, capped = run_capped(cmd, folder, dict(os.environ), cap)
    try:
        summary = json.loads((folder / "stdout.txt").read_text().strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = {}
    if "tested" not in summary and (out / "state.json").exists():
        summary = json.loads((out / "state.json").read_text())
    result = next((p for p in (out / "repro.py", out / "best.py") if p.exists()), work)
    return {"file": result, "wall": wall, "capped": capped, "tested": summary.get("tested"),
            "steps": progress(out / "reduce.log", started)}


def reach(case: str, results: dict[str, tuple[dict, dict]]) -> str | None:
    """How soon reducer got down to the best other tool's (unslipped) result, as a table line."""
    if "reducer" not in results:
        return None
    others = [(m["tokens"], r["wall"], tool) for tool, (r, m) in results.items()
              if tool != "reducer" and not m.get("slipped") and isinstance(m.get("tokens"), int)]
    if not others:
        return None
    tokens, wall, tool = min(others)
    r, m = results["reducer"]
    times = [t for t, n in r.get("steps", []) if n <= tokens]
    if isinstance(m.get("tokens"), int) and m["tokens"] <= tokens and not times:
        times = [r["wall"]]
    if not times:
        return f"| {case} | {tool}: {tokens} tokens in {wall:.0f} s | not reached | – |"
    return f"| {case} | {tool}: {tokens} tokens in {wall:.0f} s | {times[0]:.0f} s | {times[0] / wall:.2f} |"


def run_shrinkray(folder: Path, work: Path, jobs: int, cap: float, bench: Path, case: str,
                  exe: Path) -> dict:
    test = counting_test(folder, bench, case)
    cmd = [str(exe), "--parallelism", str(jobs), "--timeout", "150", "--no-llm", "--ui", "basic",
           "--formatter", "none", "--no-history", "--input-type", "arg", str(test), str(work)]
    env = dict(os.environ, SHRINKRAY_LLM="0")
    wall, capped = run_capped(cmd, folder, env, cap)
    return {"file": work, "wall": wall, "capped": capped, "tested": counted(folder)}


def run_pysource(folder: Path, work: Path, jobs: int, cap: float, bench: Path, case: str) -> dict:
    test = counting_test(folder, bench, case)
    cmd = [sys.executable, str(Path(__file__).resolve()), "_pysource", str(work), str(test), str(bench)]
    wall, capped = run_capped(cmd, folder, dict(os.environ), cap)
    return {"file": work, "wall": wall, "capped": capped, "tested": counted(folder)}


def pysource_driver(file: str, test: str, bench: str) -> None:
    """Minimize FILE in place with pysource-minimize; TEST FILE exits 0 when it is interesting.
    Every accepted candidate no larger (in tokens) than the best so far is written to FILE at
    once, so that a run stopped at the cap leaves its best program."""
    from pysource_minimize import minimize

    spec = importlib.util.spec_from_file_location("bench_measure", Path(bench) / "measure.py")
    measure_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(measure_mod)
    path = Path(file)
    scratch = Path(tempfile.mkdtemp(prefix="pysource-"))
    candidate = scratch / path.name
    best = [measure_mod.tokens(path)]

    def keep(source: str) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(source)
        os.replace(tmp, path)

    def checker(source: str) -> bool:
        candidate.write_text(source)
        ok = subprocess.call([test, str(candidate)], cwd=scratch, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) == 0
        if ok and measure_mod.tokens(candidate) <= best[0]:
            best[0] = measure_mod.tokens(candidate)
            keep(source)
        return ok

    keep(minimize(path.read_text(), checker))
    shutil.rmtree(scratch, ignore_errors=True)


# -- the table -----------------------------------------------------------------------------
def signature(file: Path) -> dict | None:
    """The failure signature `reducer check` gives FILE (family and fields), or None."""
    done = subprocess.run([sys.executable, "-m", "reducer.cli", "check", str(file), "--json"], capture_output=True,
                          text=True, cwd=file.parent, timeout=900)
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return {"family": found.get("family"), "fields": found.get("fields")}


def judge(m: dict, original: dict | None, result: dict | None) -> dict:
    """Add to the measurement `m` whether the result kept the original's signature and slipped."""
    m = dict(m, same_signature=original is not None and result == original)
    m["slipped"] = m.get("reproduces") != "yes" or not m["same_signature"]
    return m


def row(case: str, tool: str, r: dict, m: dict) -> str:
    tested = r.get("tested")
    rate = f"{tested / r['wall']:.2f}" if tested is not None and r["wall"] > 0 else "?"
    naive = {"yes": "yes", "no": "**no**"}.get(m.get("reproduces"), "?")
    same = "yes" if m.get("same_signature") else "**no**"
    slipped = "**yes**" if m.get("slipped") else "no"
    return (f"| {case} | {tool} | {m.get('tokens', '?')} | {m.get('ratio', '?')} | {r['wall']:.0f} "
            f"| {tested if tested is not None else '?'} | {rate} | {naive} | {same} | {slipped} "
            f"| {'yes' if r['capped'] else 'no'} |")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="reducer vs Shrink Ray vs pysource-minimize on the benchmark cases")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated, from " + ",".join(TOOLS))
    ap.add_argument("--jobs", type=int, default=2, help="parallel candidates for every tool (default 2)")
    ap.add_argument("--cap", type=float, default=600.0, help="seconds per tool per case (default 600)")
    ap.add_argument("--out", type=Path, help="output folder (default: a new temporary folder)")
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH, help="the benchmark folder (cases/, minimal/, measure.py, interesting.sh; default benchmarks/)")
    ap.add_argument("--recheck", type=Path, help="build the table again from an earlier run's folder")
    ap.add_argument("--shrinkray-venv", type=Path, default=HERE / ".venv-shrinkray",
                    help="Python >= 3.12 venv for Shrink Ray (made on first use)")
    args = ap.parse_args(argv)
    all_cases = sorted(p.stem for p in (args.bench / "cases").glob("*.py"))
    if not all_cases:
        fail(f"no cases in {args.bench / 'cases'}")
    args.cases = args.cases.split(",") if args.cases else all_cases
    unknown = [c for c in args.cases if c not in all_cases]
    if unknown:
        fail(f"unknown case {unknown[0]!r}; known: {', '.join(all_cases)}")
    args.tools = args.tools.split(",")
    unknown = [t for t in args.tools if t not in TOOLS]
    if unknown:
        fail(f"unknown tool {unknown[0]!r}; known: {', '.join(TOOLS)}")
    if args.jobs < 1 or args.cap <= 0:
        fail("--jobs must be at least 1 and --cap positive")
    if importlib.util.find_spec("jax") is None:
        fail(f"{sys.executable} has no jax: run this with the project's interpreter (.venv/bin/python)")
    if "pysource-minimize" in args.tools and importlib.util.find_spec("pysource_minimize") is None:
        fail("pysource-minimize is not installed: pip install -e '.[bench]'")
    return args


def main(argv: list[str]) -> None:
    if argv[:1] == ["_pysource"]:
        return pysource_driver(*argv[1:4])
    args = parse_args(argv)
    exe = shrinkray_venv(args.shrinkray_venv.resolve()) if "shrinkray" in args.tools else None
    found = versions(args.tools, exe)
    out = (args.recheck or args.out or Path(tempfile.mkdtemp(prefix="versus-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    head = ["# reducer vs Shrink Ray vs pysource-minimize", "",
            "versions: " + ", ".join(f"{t} {v}" for t, v in found.items()) + f"; Python {platform.python_version()}",
            f"jobs: {args.jobs} (pysource-minimize is sequential); cap: {args.cap:.0f} s per tool per case; "
            f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
            "naive test for Shrink Ray and pysource-minimize: interesting.sh; reducer: its own oracle (auto); "
            "naive test: `measure.py --check` still sees the failure; same signature: `reducer check` gives the "
            "original's signature; slipped: either is no", "",
            "| case | tool | tokens | ratio to minimum | wall s | candidates | candidates/s | naive test "
            "| same signature | slipped | cap hit |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows, reached = [], []
    print("\n".join(head), file=sys.stderr, flush=True)
    for case in args.cases:
        source = args.bench / "cases" / f"{case}.py"
        original = signature(source)
        results = {}
        for tool in args.tools:
            folder = out / case / tool
            if args.recheck:
                saved = folder / "result.json"
                if not saved.exists():
                    continue
                r = json.loads(saved.read_text())
                r["file"] = folder / r["file"]
                results[tool] = (r, judge(measure(args.bench, case, r["file"]), original, signature(r["file"])))
                rows.append(row(case, tool, *results[tool]))
                print(rows[-1], file=sys.stderr, flush=True)
                continue
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            work = folder / source.name
            shutil.copy2(source, work)
            if tool == "reducer":
                r = run_reducer(folder, work, args.jobs, args.cap, args.bench, case)
            elif tool == "shrinkray":
                r = run_shrinkray(folder, work, args.jobs, args.cap, args.bench, case, exe)
            else:
                r = run_pysource(folder, work, args.jobs, args.cap, args.bench, case)
            saved = dict(r, file=str(Path(r["file"]).relative_to(folder)))
            (folder / "result.json").write_text(json.dumps(saved, indent=1))
            results[tool] = (r, judge(measure(args.bench, case, r["file"]), original, signature(Path(r["file"]))))
            rows.append(row(case, tool, *results[tool]))
            print(rows[-1], file=sys.stderr, flush=True)
        line = reach(case, results)
        if line:
            reached.append(line)
    table = "\n".join(head + rows) + "\n"
    if reached:
        table += "\n".join(["", "reducer against the best unslipped other result (time from reducer's reduce.log):", "",
                             "| case | best other tool | reducer reached it after | fraction of that tool's time |",
                             "|---|---|---|---|", *reached]) + "\n"
    (out / "versus.md").write_text(table)
    print(table)
    print(f"wrote {out / 'versus.md'}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
