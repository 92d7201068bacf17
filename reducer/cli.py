"""The `reducer` command: reduce, check, env.

Exit statuses are listed once, in `reducer.errors`; bad input gets one line and its status.
"""
from __future__ import annotations

import json
import os
import signal
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.text import Text

from reducer import env as envmod
from reducer.engine import Event
from reducer.errors import INTERRUPTED, USAGE, ReducerError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Shrink failing JAX / Enzyme-JAX programs to minimal reproducers with bug reports.")
err = Console(stderr=True)

ORACLE_HELP = "auto, adjoint-missing, activity-mismatch, crash, regex:PATTERN or script:COMMAND (exit 0 = interesting)"


class Platform(str, Enum):
    cpu = "cpu"
    gpu = "gpu"


def fail(message: str, status: int) -> None:
    err.print(f"[bold red]reducer:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


class Display:
    """Progress on the terminal (rich), JSON lines, or nothing."""

    def __init__(self, mode: str, original_tokens: int):
        self.mode = mode
        self.original = original_tokens
        self.live = None
        self.pass_name = ""
        self.size = original_tokens
        if mode == "rich":
            self.live = Live(Text(""), console=err, refresh_per_second=4, transient=False)

    def __enter__(self):
        if self.live:
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live:
            self.live.__exit__(*exc)

    def event(self, e: Event) -> None:
        if e.pass_name:
            self.pass_name = e.pass_name
        self.size = e.size
        s = e.stats
        if self.mode == "json" and e.kind == "accept":
            print(json.dumps({"event": "accept", "pass": e.pass_name, "tokens": e.size, "tested": s.tested,
                              "seconds": round(s.seconds, 1)}), file=sys.stderr, flush=True)
        if self.live:
            pct = 100 * e.size / self.original if self.original else 100
            self.live.update(Text.assemble(
                ("reducing ", "bold"), f"{e.size}/{self.original} tokens ({pct:.0f}%)  ",
                f"tested {s.tested}  accepted {s.accepted}  cache hits {s.cache_hits}  ",
                ("pass ", "dim"), f"{self.pass_name}  ", ("elapsed ", "dim"), f"{s.seconds:.0f} s"))

    def log(self, line: str) -> None:
        if self.mode == "rich":
            err.print(f"[dim]{line}[/]", highlight=False, soft_wrap=True)


@app.command()
def reduce(
    script: Path = typer.Argument(..., help="the failing script (.py)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder (default reduced-<script name>/)"),
    oracle: str = typer.Option("auto", "--oracle", help=ORACLE_HELP),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds per candidate (default: 4x the first run, at least 20)"),
    platform: Platform = typer.Option(Platform.cpu, "--platform", help="JAX backend the candidates run on"),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", "-j", help="candidates tested at once"),
    runs: int = typer.Option(3, "--runs", help="runs of the original, to measure how reliably it fails"),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="stop reducing after this many seconds"),
    stall: float = typer.Option(600.0, "--stall", help="stop when this many seconds pass without a smaller "
                                "candidate (0: never)"),
    memory_mb: Optional[int] = typer.Option(None, "--memory-mb", help="address-space limit per candidate"),
    hangs: bool = typer.Option(False, "--hangs", help="with the crash oracle, count a timeout as the failure"),
    cold: bool = typer.Option(False, "--cold", help="run every candidate in a fresh interpreter (no warm workers)"),
    runner: str = typer.Option("trust", "--runner", help="with warm workers: trust (candidates run one after "
                               "another in one warm interpreter; the result is checked in a child of its own), "
                               "confirm (every interesting verdict checked so), off (a forked child per candidate)"),
    pass_order: str = typer.Option("fixed", "--pass-order", help="fixed (registration order every round) or yield "
                                   "(from the second round on, the passes that shrank the program most per "
                                   "candidate in the round before go first)"),
    levels: str = typer.Option("auto", "--levels", help="levels to reduce at: auto, or a comma list of source, jaxpr "
                               "(the traced program: the failing transformation's jaxpr, written back as a script)"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue the interrupted reduction in this output folder"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable: JSON progress on stderr, summary on stdout"),
):
    """Shrink SCRIPT to the smallest program that fails in the same way, and write a bug report."""
    from reducer.reduce import RUNNER_MODES, Options, Reduction

    if jobs < 1 or runs < 1:
        fail("--jobs and --runs must be at least 1", USAGE)
    if stall < 0:
        fail("--stall must be 0 (never) or a number of seconds", USAGE)
    if pass_order not in ("fixed", "yield"):
        fail(f"--pass-order must be fixed or yield, not {pass_order!r}", USAGE)
    if runner not in RUNNER_MODES:
        fail(f"--runner must be one of {', '.join(RUNNER_MODES)}, not {runner!r}", USAGE)
    if script.suffix == ".mlir":
        from reducer.levels.mlir.level import cli_reduce

        raise typer.Exit(cli_reduce(script, out, oracle, timeout, jobs, max_time, platform.value, quiet, json_out, fail))
    from reducer.levels.jaxpr.level import parse_levels

    try:
        parse_levels(levels)
    except ValueError as exc:
        fail(f"--levels: {exc}", USAGE)
    options = Options(oracle=oracle, timeout=timeout, platform=platform.value, jobs=jobs, runs=runs,
                      max_time=max_time, stall=stall or None, memory_mb=memory_mb, hangs=hangs, warm=not cold,
                      runner=runner, reorder=pass_order == "yield", levels=levels)
    try:
        if resume is not None and out is not None and out != resume:
            fail("give either --out or --resume, not both", USAGE)
        job = Reduction(script, resume or out, options, resume=resume is not None)
    except ReducerError as exc:
        fail(str(exc), exc.status)
    except ValueError as exc:
        fail(str(exc), USAGE)
    mode = "json" if json_out else ("quiet" if quiet or not err.is_terminal else "rich")
    display = Display(mode, job.rep.size(job.source))
    job.on_event = display.event
    job.log_sink = display.log if mode == "rich" else (lambda line: None)
    if mode == "quiet" and not quiet:
        job.log_sink = lambda line: print(line, file=sys.stderr, flush=True)

    def interrupt(signum, frame):
        job.stop.set()
        job.sandbox.kill_all()

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with display:
            result = job.run()
    except ReducerError as exc:
        job.close()
        fail(str(exc), exc.status)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    job.close()
    if json_out:
        print(json.dumps(result))
    elif not quiet:
        err.print(f"[bold]{result['original_tokens']} -> {result['final_tokens']} tokens[/] in {result['seconds']} s; "
                  f"verified: {result['verified']}\nwrote {result['out']}/repro.py and report.md", highlight=False)
    if result["interrupted"]:
        raise typer.Exit(INTERRUPTED)


@app.command()
def check(
    script: Path = typer.Argument(..., help="the script to run once"),
    oracle: str = typer.Option("auto", "--oracle", help=ORACLE_HELP),
    platform: Platform = typer.Option(Platform.cpu, "--platform"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds before the run is stopped"),
    json_out: bool = typer.Option(False, "--json"),
):
    """Run SCRIPT once and print its failure signature (exit 0), or say it does not fail (exit 1)."""
    from reducer.errors import NO_FAILURE
    from reducer.reduce import Options, Reduction

    try:
        job = Reduction(script, None, Options(oracle=oracle, platform=platform.value, timeout=timeout, jobs=1))
    except ReducerError as exc:
        fail(str(exc), 2)
    except ValueError as exc:
        fail(str(exc), 2)
    try:
        est = job.establish(runs=1)
    except ReducerError as exc:
        job.close()
        if exc.status == NO_FAILURE:
            err.print(f"{script}: does not fail: nothing to reduce", highlight=False)
            raise typer.Exit(1)
        fail(str(exc), 1)
    job.close()
    if json_out:
        print(json.dumps(est.signature.to_dict()))
    else:
        print(est.signature)
        if est.signature.title:
            print(est.signature.title)
        if est.signature.excerpt:
            print("---")
            print(est.signature.excerpt)


@app.command("env")
def env_command(
    platform: Platform = typer.Option(Platform.cpu, "--platform"),
    json_out: bool = typer.Option(False, "--json"),
):
    """Print the environment report that goes into bug reports."""
    info = envmod.collect(platform=platform.value)
    print(json.dumps(info, indent=2) if json_out else envmod.render(info))


from reducer.cli_corpus import corpus_app, report_command  # noqa: E402
app.add_typer(corpus_app, name="corpus")
app.command("report")(report_command)


def main() -> None:  # pragma: no cover
    app()
if __name__ == "__main__":
    app()
