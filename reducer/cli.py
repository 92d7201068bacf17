"""The `reducer` command: reduce, check, env (report, corpus and the others register below).

Exit statuses are listed once, in `reducer.errors`; bad input gets one line and its status.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.text import Text

from reducer import env as envmod, filing
from reducer.engine import Event
from reducer.errors import USAGE, FailsAfterEarlierTests, ReducerError
from reducer.settings import command_keys, project_defaults  # [tool.reducer] in pyproject.toml: the options' defaults

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Shrink failing JAX / Enzyme-JAX programs to minimal reproducers with bug reports.")
err = Console(stderr=True)

TIMEOUT_HELP = "seconds per candidate (default: 4x the first run, at least 20)"
MEMORY_HELP = "address-space limit per candidate (default: 70% of memory shared by the jobs; none with --platform gpu)"
RESUME_HELP = "continue the interrupted reduction in this output folder"
ORACLE_HELP = ("auto, adjoint-missing, activity-mismatch, pipeline-error, crash, wrong-result, jax-error, "
               "regex:PATTERN or script:COMMAND (exit 0 = interesting)")
MODULE_HELP = "instead of SCRIPT, what `python -m MODULE` runs from here (its arguments after `--`)"


class Platform(str, Enum):
    cpu = "cpu"
    gpu = "gpu"


def fail(message: str, status: int) -> None:
    err.print(f"[bold red]reducer:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


class Display:
    """Progress on the terminal (rich), JSON lines, or nothing; sizes in the job's unit (tokens,
    operations), or passes while a pipeline shrinks."""

    def __init__(self, mode: str, original_size: int = 0, unit: str = "tokens"):
        self.mode = mode
        self.original = original_size
        self.unit = unit
        self.live = None
        self.pass_name = ""
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
        if e.pass_name and e.kind != "round":
            self.pass_name = e.pass_name
        s = e.stats
        unit = e.unit or self.unit
        if self.mode == "json" and e.kind == "accept":
            print(json.dumps({"event": "accept", "pass": e.pass_name, unit: e.size, "tested": s.tested,
                              "seconds": round(s.seconds, 1)}), file=sys.stderr, flush=True)
        if self.live:
            whole = f"/{self.original} {unit} ({100 * e.size / self.original:.0f}%)" if unit == self.unit and \
                self.original else f" {unit}"
            self.live.update(Text.assemble(
                ("reducing ", "bold"), f"{e.size}{whole}  ",
                f"tested {s.tested}  accepted {s.accepted}  cache hits {s.cache_hits}  ",
                ("pass ", "dim"), f"{self.pass_name}  ", ("elapsed ", "dim"), f"{s.seconds:.0f} s"))

    def log(self, line: str) -> None:
        if self.mode == "rich":
            err.print(f"[dim]{line}[/]", highlight=False, soft_wrap=True)


class Progress:
    """Where a job reports as it runs, chosen before it is made (its `on_event` and `log`): a display
    in the mode --quiet and --json ask for (the original's size filled in when the job is made), and
    the log lines printed as they come when the terminal cannot show progress."""

    def __init__(self, quiet: bool, json_out: bool):
        self.mode = "json" if json_out else ("quiet" if quiet or not err.is_terminal else "rich")
        self.display = Display(self.mode)
        self.quiet = quiet

    def event(self, e: Event) -> None:
        self.display.event(e)

    def log(self, line: str) -> None:
        if self.mode == "rich":
            self.display.log(line)
        elif self.mode == "quiet" and not self.quiet:
            print(line, file=sys.stderr, flush=True)


def run_job(job, quiet: bool, json_out: bool, bisect: str | None = None, progress: Progress | None = None,
            again=None) -> int:
    """Run a reduction job with progress and signals; print its summary; return its exit status.
    `progress` is what the job was made to report to (None: nothing). With `bisect` (a package
    name), a verified result is then bisected over that package's releases. `again` makes the job
    anew for a test that fails only after the tests before it in its module."""
    display = progress.display if progress is not None else Display("quiet")
    display.original, display.unit = job.progress_info()
    try:
        with job.signals(), display:
            result = job.run()
    except FailsAfterEarlierTests as exc:
        job.close()
        if again is None:
            fail(str(exc), exc.status)
        job = again()
        job.log(f"{exc}; the job is made again with them")
        return run_job(job, quiet, json_out, bisect, progress)
    except ReducerError as exc:
        job.close()
        fail(str(exc), exc.status)
    job.close()
    if bisect and result["status"] == 0:
        from reducer.versions.cli import after_reduction

        result["versions"] = after_reduction(Path(result["out"]), bisect, job.votes,
                                             job.options.platform, quiet or json_out)
    report = Path(result["out"]) / "report.md" if result.get("out") else None
    filed = filing.read(report.read_text()) if report and report.is_file() else None
    if json_out:
        print(json.dumps({k: v for k, v in result.items() if k not in ("module", "runner_text")}
                         | ({"filing": filed.to_dict()} if filed else {})))
    elif not quiet:
        size = result["size"]
        written = ", ".join(name for name in ("repro.mlir", "repro.py") if (Path(result["out"]) / name).is_file())
        err.print(f"[bold]{size['from']} -> {size['to']} {size['unit']}[/] in {result['seconds']} s; verified: "
                  f"{result['verified']}\nwrote {result['out']}/{written} and report.md",
                  highlight=False, soft_wrap=True)
        if filed:
            err.print(filing.said(filed), highlight=False, soft_wrap=True)
    if "bug" in result:
        err.print(f"[bold red]reducer:[/] bug in reducer: {result['bug']}; stopped, and wrote the best program "
                  f"so far to {result['out']} (traceback in reduce.log)", highlight=False, soft_wrap=True)
    return result["status"]


def run_made(make, quiet: bool, json_out: bool, bisect: str | None, progress: Progress) -> int:
    """`run_job` of the job `make()` builds (one line and its status for a bad value); a test that
    fails only after the tests before it in its module is made again with them."""
    try:
        job = make()
    except (ReducerError, ValueError) as exc:  # a bad value of an option (ValueError) is a usage error
        fail(str(exc), getattr(exc, "status", USAGE))
    return run_job(job, quiet, json_out, bisect, progress, again=lambda: make(after_earlier=True))


class ProgramCommand(typer.core.TyperCommand):
    """Keeps the command line as given: with `-m MODULE`, the first argument after `--` is the module's."""

    def parse_args(self, ctx, args):
        ctx.meta["argv"] = list(args)
        return super().parse_args(ctx, args)


def program(ctx, script: Optional[Path], args, module: Optional[str]) -> tuple[Optional[Path], tuple[str, ...]]:
    """SCRIPT or `-m MODULE` (one line and exit 2 unless exactly one), and the program's arguments."""
    args, argv = tuple(args or ()), ctx.meta.get("argv", [])
    if module is not None and script is not None:
        if "--" in argv and not any(Path(a) == script for a in argv[:argv.index("--")]):
            return None, (argv[argv.index("--") + 1], *args)
        fail("give either SCRIPT or -m MODULE, not both", USAGE)
    if module is None and script is None:
        fail("give the SCRIPT to run (or -m MODULE)", USAGE)
    return script, args


def check_choices(jobs: int, runs: Optional[int], stall: float, max_time: Optional[float], pass_order: str,
                  runner: Optional[str], levels: Optional[str]) -> None:
    """One line and exit 2 for a value `reducer reduce` cannot take."""
    from reducer.reduce import parse_levels
    from reducer.second_look import RUNNER_MODES

    if jobs < 1 or (runs is not None and runs < 1):
        fail("--jobs and --runs must be at least 1", USAGE)
    if stall < 0 or (max_time is not None and max_time <= 0):
        fail("--stall must be 0 (never) or a number of seconds, --max-time a positive number of seconds", USAGE)
    if pass_order not in ("fixed", "yield"):
        fail(f"--pass-order must be fixed or yield, not {pass_order!r}", USAGE)
    if runner is not None and runner not in RUNNER_MODES:
        fail(f"--runner must be one of {', '.join(RUNNER_MODES)}, not {runner!r}", USAGE)
    try:
        parse_levels(levels or "auto")
    except ValueError as exc:
        fail(f"--levels: {exc}", USAGE)


@app.command(cls=ProgramCommand)
def reduce(
    ctx: typer.Context,
    script: Optional[Path] = typer.Argument(None, metavar="SCRIPT", callback=project_defaults, help="the failing "
                                            "script (.py), a test's node id (FILE.py::test), a Jupyter notebook "
                                            "(.ipynb) or an MLIR module (.mlir)"),
    module: Optional[str] = typer.Option(None, "--module", "-m", help=MODULE_HELP, callback=project_defaults),
    args: Optional[list[str]] = typer.Argument(None, metavar="-- ARGS", help="the script's command-line "
                                               "arguments, after `--`: every run gets them, the reproducer has them "
                                               "baked in"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="output folder (default reduced-<script name>/)"),
    oracle: str = typer.Option("auto", "--oracle", help=ORACLE_HELP),
    timeout: Optional[float] = typer.Option(None, "--timeout", help=TIMEOUT_HELP),
    platform: Platform = typer.Option(Platform.cpu, "--platform", help="JAX backend the candidates run on "
                                      "(gpu: with the CPU beside it, a second reference for wrong results)"),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", "-j", help="candidates tested at once"),
    runs: Optional[int] = typer.Option(None, "--runs", help="runs of the original, to measure how reliably it "
                                       "fails (default 3; scripts only)"),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="stop after this many seconds, final checks "
                                             "included"),
    stall: float = typer.Option(600.0, "--stall", help="stop when this many seconds pass without a smaller "
                                "candidate (0: never)"),
    memory_mb: Optional[int] = typer.Option(None, "--memory-mb", help=MEMORY_HELP),
    hangs: bool = typer.Option(False, "--hangs", help="with the crash oracle, count a timeout as the failure"),
    cold: bool = typer.Option(False, "--cold", help="run every candidate in a fresh interpreter (no warm workers)"),
    runner: Optional[str] = typer.Option(None, "--runner", help="scripts, with warm workers: trust (default: "
                                         "candidates run one after another in one warm interpreter; the result is "
                                         "checked in a child of its own), confirm (every interesting verdict checked "
                                         "so), off (a forked child per candidate)"),
    pass_order: str = typer.Option("fixed", "--pass-order", help="fixed (registration order every round) or yield "
                                   "(from the second round on, the passes that shrank the program most per "
                                   "candidate in the round before go first)"),
    levels: Optional[str] = typer.Option(None, "--levels", help="scripts: auto (default), or a comma list of source, "
                                         "jaxpr (the traced program: the failing transformation's jaxpr, written "
                                         "back as a script)"),
    resume: Optional[Path] = typer.Option(None, "--resume", help=RESUME_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable: JSON progress on stderr, summary on stdout"),
    bisect: Optional[str] = typer.Option(None, "--bisect", help="after verifying, find which releases of this "
                                         "package (jax, jaxlib, enzyme-ad …) show the failure (`reducer bisect`)"),
):
    """Shrink SCRIPT (or FILE.mlir) to the smallest program that fails in the same way, and write a bug report."""
    from reducer.corpus import known_line
    from reducer.entry import job_for
    from reducer.reduce import Options

    check_choices(jobs, runs, stall, max_time, pass_order, runner, levels)
    script, args = program(ctx, script, args, module)
    if resume is not None and out is not None and out != resume:
        fail("give either --out or --resume, not both", USAGE)
    options = Options(oracle=oracle, timeout=timeout, platform=platform.value, jobs=jobs, runs=runs or 3,
                      max_time=max_time, stall=stall or None, memory_mb=memory_mb, hangs=hangs, warm=not cold,
                      runner=runner or "trust", reorder=pass_order == "yield", levels=levels or "auto")
    progress = Progress(quiet, json_out)
    given = {"--runner": runner, "--levels": levels, "--runs": runs}
    make = functools.partial(job_for, script, resume or out, options, resume is not None, args=args, known=known_line,
                             given=given, module=module, on_event=progress.event, log=progress.log)
    raise typer.Exit(run_made(make, quiet, json_out, bisect, progress))


@app.command(cls=ProgramCommand)
def check(
    ctx: typer.Context,
    script: Optional[Path] = typer.Argument(None, metavar="SCRIPT", callback=project_defaults, help="the script "
                                            "(.py), a test's node id or an MLIR module (.mlir) to run once"),
    module: Optional[str] = typer.Option(None, "--module", "-m", help=MODULE_HELP, callback=project_defaults),
    args: Optional[list[str]] = typer.Argument(None, metavar="-- ARGS", help="the script's command-line "
                                               "arguments, after `--`"),
    oracle: str = typer.Option("auto", "--oracle", help=ORACLE_HELP),
    platform: Platform = typer.Option(Platform.cpu, "--platform", help="JAX backend the program runs on "
                                      "(gpu: with the CPU beside it, a second reference for wrong results)"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds before the run is stopped"),
    json_out: bool = typer.Option(False, "--json"),
):
    """Run SCRIPT once and print its failure signature (exit 0), or say it does not fail (exit 1)."""
    from reducer.corpus import known_line
    from reducer.entry import job_for
    from reducer.errors import NO_BACKEND, NO_FAILURE
    from reducer.reduce import Options

    script, args = program(ctx, script, args, module)
    options = Options(oracle=oracle, platform=platform.value, timeout=timeout, jobs=1, runs=1)
    try:
        job = job_for(script, None, options, args=args, module=module)
    except (ReducerError, ValueError) as exc:
        fail(str(exc), 2)
    try:
        established = job.check()
    except ValueError as exc:  # an oracle's setting that fails on first use (a command that cannot run)
        fail(str(exc), 2)
    except ReducerError as exc:
        if exc.status == NO_FAILURE:  # said so, or that it fails only after the tests before it
            said = str(exc) if isinstance(exc, FailsAfterEarlierTests) else f"{script or f'-m {module}'}: " \
                "does not fail: nothing to reduce"
            err.print(said, highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        fail(str(exc), NO_BACKEND if exc.status == NO_BACKEND else 1)
    finally:
        job.close()
    known = known_line(established.signature)
    if json_out:
        print(json.dumps({**established.signature.to_dict(), **({"known": known} if known else {})}))
    else:
        print(established.signature)
        if established.signature.title:
            print(established.signature.title)
        if known:
            print(known)
        if established.signature.excerpt:
            print("---")
            print(established.signature.excerpt)


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
from reducer.cli_hunt import hunt_command  # noqa: E402
app.command("hunt")(hunt_command)
from reducer.versions.cli import bisect_command  # noqa: E402
app.command("bisect")(bisect_command)


def cli_keys() -> set[str]:
    """The [tool.reducer] keys the `reducer` command allows (for readers outside the CLI: the pytest plugin)."""
    import typer.main

    return command_keys(typer.main.get_command(app))


def main() -> None:  # pragma: no cover
    app()
if __name__ == "__main__":
    app()
