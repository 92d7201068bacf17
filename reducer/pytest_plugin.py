"""`pytest --reduce`: after the run, every failing test is reduced by `reducer reduce NODE_ID`.

Registered as the `pytest11` entry point `reducer` (`-p no:reducer` turns it off). Without
`--reduce` it only adds its options (its `pytest_configure` registers nothing, so no hook of it
runs during the session). With it, the failures
are collected as pytest reports them (`pytest_runtest_logreport`: a failing test body, or a set-up
that fails, such as a fixture error), and after the run, in the terminal summary, each is handed
to the real command line in a subprocess of its own, one after another:

    python -m reducer.cli reduce NODE_ID --out DIR/SAFE_ID [--max-time T] [--oracle O] --quiet --json

run in pytest's root folder (where node ids are relative to); `--max-time` is left out when only
`[tool.reducer]` sets it (the command reads it there itself). Each writes DIR/SAFE_ID/ with
`repro.py` and `report.md`, and the "reducer" section of the summary gets one line per test: the
node id, what came of it (`reduced 120 -> 9 tokens in 17 s, SIGNATURE`, or why not, in reducer's
own line) and the folder. Under pytest-xdist only the controller reduces (the workers' reports reach
it). The `[tool.reducer]` settings of the nearest pyproject.toml are the CLI's own defaults there;
`--reduce-max-time` and `--reduce-oracle` win over them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: seconds per test when neither --reduce-max-time nor [tool.reducer] max-time says
DEFAULT_MAX_TIME = 300.0
#: what a reduction may take beyond its --max-time before it is stopped (start-up, writing, a slow exit)
GRACE = 120.0
#: longest folder name kept whole; a longer one is cut and given a hash of the whole id
MAX_NAME = 120


def pytest_addoption(parser) -> None:
    group = parser.getgroup("reducer", "reduce failing tests to minimal reproducers (reducer)")
    group.addoption("--reduce", action="store_true", default=False,
                    help="after the run, reduce every failing test with `reducer reduce NODE_ID`")
    group.addoption("--reduce-max-time", type=float, default=None, metavar="SECONDS",
                    help=f"seconds per test's reduction (default: [tool.reducer] max-time, else "
                         f"{DEFAULT_MAX_TIME:.0f})")
    group.addoption("--reduce-oracle", default=None, metavar="ORACLE",
                    help="the oracle of every reduction (default: [tool.reducer] oracle, else auto)")
    group.addoption("--reduce-dir", default="reduced", metavar="DIR",
                    help="where the reduced folders go, one per test (default: reduced)")


def pytest_configure(config) -> None:
    """With --reduce, and in the controller only (never in an xdist worker), the session's reducer."""
    if config.getoption("reduce", False) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FailureReducer(config), "reducer-session")


def safe_name(node_id: str) -> str:
    """A node id made a folder name, readable: `tests/test_ops.py::test_grad[running_lse]` gives
    `tests_test_ops.py__test_grad[running_lse]`; what a file name should not hold becomes `_`."""
    name = node_id.replace("::", "__").replace("/", "_").replace("\\", "_")
    name = re.sub(r"[^A-Za-z0-9._\-\[\]=+,@]", "_", name).lstrip(".-") or "test"
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 9]}-{hashlib.sha1(node_id.encode()).hexdigest()[:8]}"
    return name


@dataclass
class Result:
    """What one reduction came to: `line` for the summary; `folder` when it wrote one."""

    node_id: str
    folder: Path
    ok: bool
    line: str
    seconds: float = 0.0


def signature_text(sig: dict) -> str:
    fields = " ".join(f"{k}={v}" for k, v in (sig.get("fields") or {}).items())
    return f"{sig.get('family', '?')}: {fields}" if fields else str(sig.get("family", "?"))


def why_not(stderr: str, status: int) -> str:
    """reducer's own one line (`reducer: …`), else the last line it wrote, else its exit status."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.lstrip().startswith("{")]
    said = [line for line in lines if line.startswith("reducer:")]
    if said:
        return said[-1].removeprefix("reducer:").strip()
    return lines[-1] if lines else f"reducer exited with status {status}"


def outcome_line(summary: dict | None, stderr: str, status: int, seconds: float) -> tuple[bool, str]:
    """(reduced?, what to say) from the command's JSON summary, its stderr, its exit status and its time."""
    took = f" in {seconds:.0f} s"
    if summary is None:
        return False, f"not reduced{took}: {why_not(stderr, status)}"
    said = summary.get("size") or {}
    size = f"{said.get('from')} -> {said.get('to')} {said.get('unit', 'tokens')}"
    sig = signature_text(summary.get("signature") or {})
    if status == 0:
        return True, f"reduced {size}{took}, {sig}"
    why = f"bug in reducer: {summary['bug']}" if summary.get("bug") else f"verified: {summary.get('verified', '?')}"
    return False, f"not reduced to a verified reproducer (exit {status}; {why}); best so far {size}{took}, {sig}"


def command(node_id: str, out: Path, max_time: float | None, oracle: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "reducer.cli", "reduce", node_id, "--out", str(out)]
    if max_time is not None:
        cmd += ["--max-time", f"{max_time:g}"]
    if oracle is not None:
        cmd += ["--oracle", oracle]
    return cmd + ["--quiet", "--json"]


def run_reducer(cmd: list[str], cwd: Path, limit: float) -> tuple[int, str, str]:
    """Run one reduction in a session of its own; past `limit` seconds (or on Ctrl-C) it is asked to
    stop (SIGTERM: it writes the best program so far), then killed. (status, stdout, stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
        stop(proc)
        out, err = proc.communicate()
        if isinstance(exc, KeyboardInterrupt):
            raise
        err += f"\nreducer: stopped after {limit:.0f} s (the reduction did not end within its --max-time)"
    return proc.returncode, out, err


def stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def json_summary(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


class FailureReducer:
    """The session's failing tests, and their reduction in the terminal summary."""

    def __init__(self, config):
        self.config = config
        self.failed: dict[str, str] = {}  # node id -> when it failed (call, setup)
        self.results: list[Result] = []
        self.names: set[str] = set()

    def pytest_runtest_logreport(self, report) -> None:
        if not report.failed or report.nodeid in self.failed or hasattr(report, "wasxfail"):
            return
        if report.when in ("call", "setup"):
            self.failed[report.nodeid] = report.when
        elif report.when == "teardown":  # the test itself ran; a fixture's teardown is not reduced
            self.failed[report.nodeid] = "teardown"

    def pytest_terminal_summary(self, terminalreporter, exitstatus) -> None:
        tr = terminalreporter
        tr.section("reducer")
        if not self.failed:
            tr.write_line("no failing tests to reduce")
            return
        interrupted = int(exitstatus) == 2  # pytest.ExitCode.INTERRUPTED: Ctrl-C during the run, reduce nothing
        for node_id, when in self.failed.items():
            if interrupted:
                self.results.append(Result(node_id, Path(), False, "not reduced: interrupted"))
            elif when == "teardown":
                self.results.append(Result(node_id, Path(), False, "not reduced: it failed in a fixture's teardown, "
                                                                   "which a standalone test does not run"))
            else:
                tr.write(f"reducing {node_id} ...\n", flush=True)
                out = self.folder_for(node_id)
                try:
                    self.results.append(self.reduce(node_id, out))
                except KeyboardInterrupt:
                    interrupted = True
                    self.results.append(Result(node_id, out, False, "interrupted (Ctrl-C): the best program so "
                                                                    "far, if any, is in its folder"))
        tr.write_sep("-", "reducer: one line per failing test")
        for r in self.results:
            where = f"  -> {self.shown(r.folder)}/" if r.folder != Path() and r.folder.is_dir() else ""
            tr.write_line(f"{r.node_id}: {r.line}{where}", green=r.ok, red=not r.ok)

    def folder_for(self, node_id: str) -> Path:
        base = Path(self.config.getoption("reduce_dir") or "reduced")
        if not base.is_absolute():
            base = Path(self.config.invocation_params.dir) / base
        name = safe_name(node_id)
        if name in self.names:  # two ids that read the same once made safe
            name = f"{name}-{hashlib.sha1(node_id.encode()).hexdigest()[:8]}"
        self.names.add(name)
        return base / name

    def settings(self, node_id: str):
        """The [tool.reducer] settings the reduction will read (for its time limit); None when unreadable
        (the reduction itself then says why, in its one line)."""
        from reducer import settings
        from reducer.cli import cli_keys

        try:
            return settings.load(settings.start_for(Path(self.config.rootpath) / node_id), known=cli_keys())
        except Exception:
            return None

    def reduce(self, node_id: str, out: Path) -> Result:
        fresh_folder(out)
        max_time = self.config.getoption("reduce_max_time")
        found = self.settings(node_id)
        if max_time is None and not (found and found.get("max-time") is not None):
            max_time = DEFAULT_MAX_TIME
        try:
            limit = float(max_time if max_time is not None else found.get("max-time")) + GRACE
        except (TypeError, ValueError):  # a max-time the reduction refuses at once, in its own line
            limit = DEFAULT_MAX_TIME + GRACE
        cmd = command(node_id, out, max_time, self.config.getoption("reduce_oracle"))
        start = time.monotonic()
        status, stdout, stderr = run_reducer(cmd, Path(self.config.rootpath), limit)
        seconds = time.monotonic() - start
        ok, line = outcome_line(json_summary(stdout), stderr, status, seconds)
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        return Result(node_id, out, ok, line, seconds)

    def shown(self, folder: Path) -> str:
        try:
            return str(folder.relative_to(Path(self.config.invocation_params.dir)))
        except ValueError:
            return str(folder)


def fresh_folder(out: Path) -> None:
    """A reduction writes into an empty folder: a folder an earlier `pytest --reduce` left (it holds
    reducer's outputs) is emptied, so that no old reproducer passes for a new one."""
    if not out.is_dir():
        return
    if any((out / name).exists() for name in ("repro.py", "report.md", "reduce.log", "signature.json", "best.py")):
        import shutil

        shutil.rmtree(out)
