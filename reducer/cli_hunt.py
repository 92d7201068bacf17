"""The `reducer hunt` command: generated programs, judged by the oracles, findings reduced."""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from reducer.errors import INTERRUPTED, USAGE, ReducerError

err = Console(stderr=True)


def _fail(message: str, status: int) -> None:
    err.print(f"[bold red]reducer:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def _options(ops, modes, through, dtypes, platform, budget, out, executor, jobs, timeout, memory_mb, reduce,
             reduce_time, corpus):
    from reducer.hunt.sweep import HuntOptions
    from reducer.hunt.table import DTYPES, MODES, ROUTES, parse_list

    if jobs < 1:
        _fail("--jobs must be at least 1", USAGE)
    if platform not in ("cpu", "gpu"):
        _fail(f"--platform must be cpu or gpu, not {platform!r}", USAGE)
    try:
        return HuntOptions(ops=ops, modes=parse_list(modes, MODES, "mode"), routes=parse_list(through, ROUTES, "route"),
                           dtypes=parse_list(dtypes, DTYPES, "dtype"), platform=platform, budget=budget, out=out,
                           executor=executor, jobs=jobs, timeout=timeout, memory_mb=memory_mb or None,
                           reduce=reduce, reduce_time=reduce_time, corpus=corpus)
    except ValueError as exc:
        _fail(str(exc), USAGE)


def hunt_command(
    ops: Optional[str] = typer.Option(None, "--ops", help="operations to try: comma-separated globs or regular "
                                      "expressions over the table's names (jnp.linalg.*,special.*)"),
    modes: str = typer.Option(",".join(("grad", "jit-grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap-grad")),
                              "--modes", help="ways of differentiating, comma-separated"),
    through: str = typer.Option("jax,enzyme", "--through", help="routes: jax (JAX's AD), enzyme (enzyme_jax_ir)"),
    dtypes: str = typer.Option("float32", "--dtypes", help="float32, float64, complex64, comma-separated"),
    platform: str = typer.Option("cpu", "--platform", help="cpu or gpu"),
    budget: Optional[float] = typer.Option(None, "--budget", help="seconds for the whole hunt, reductions included"),
    out: Path = typer.Option(Path("hunt"), "--out", "-o", help="output folder"),
    executor: str = typer.Option("local", "--executor", help="local, or ray (RAY_ADDRESS's cluster, or a local one)"),
    jobs: int = typer.Option(2, "--jobs", "-j", help="programs run at once (local executor)"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds per program"),
    memory_mb: int = typer.Option(4096, "--memory-mb", help="address-space limit per program (0: none)"),
    reduce: bool = typer.Option(True, "--reduce/--no-reduce", help="reduce one program per new finding"),
    reduce_time: float = typer.Option(120.0, "--reduce-time", help="seconds per reduction"),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="the corpus that says which findings are known "
                                          "(default ./corpus, else the project's)"),
    json_out: bool = typer.Option(False, "--json", help="JSON progress on stderr, the summary on stdout"),
):
    """Generate small programs (operation x mode x route x dtype), find the failures, reduce them."""
    from reducer.cli_corpus import default_corpus
    from reducer.hunt.sweep import sweep

    options = _options(ops, modes, through, dtypes, platform, budget, out, executor, jobs, timeout, memory_mb,
                       reduce, reduce_time, corpus or default_corpus())
    progress = Progress(TextColumn("[bold]hunting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.fields[note]}"), console=err, disable=json_out or not err.is_terminal)

    def on_progress(event: dict) -> None:
        if json_out:
            print(json.dumps(event), file=sys.stderr, flush=True)
        elif event["event"] == "probe":
            progress.update(task, completed=event["done"], total=event["total"], note=event["probe"])
        else:
            progress.update(task, note=f"reducing {event['finding']}")

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with progress:
            task = progress.add_task("hunt", total=None, note="")
            summary = sweep(options, on_progress)
    except ReducerError as exc:
        _fail(str(exc), exc.status)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if json_out:
        print(json.dumps(summary))
    else:
        s = summary["sweep"]
        err.print(f"[bold]{s['ran']} programs[/], {s['failing']} failing, {len(summary['findings'])} distinct "
                  f"failures in {summary['run']['seconds']} s\nwrote {out}/hunt.md and hunt.json", highlight=False)
    if summary["interrupted"]:
        raise typer.Exit(INTERRUPTED)
