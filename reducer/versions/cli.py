"""The `reducer bisect` command: which releases of a package show a reproducer's failure."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from reducer.errors import USAGE, ReducerError
from reducer.files import scrub

err = Console(stderr=True)


def fail(message: str, status: int) -> None:
    err.print(f"[bold red]reducer:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def bisect_command(
    target: Optional[Path] = typer.Argument(None, help="a `reducer reduce` output folder, a corpus case, or a "
                                            "script (with signature.json beside it, or --oracle)"),
    package: str = typer.Option("jax", "--package", "-p", help="the package whose releases are tried: jax, "
                                "jaxlib, enzyme-ad or any other"),
    versions: Optional[str] = typer.Option(None, "--versions", help="A..B (every release from A to B) or A,B,C "
                                           "(default: the installed version and the releases of the last 12 months)"),
    jobs: int = typer.Option(2, "--jobs", "-j", help="versions probed at once"),
    oracle: str = typer.Option("auto", "--oracle", help="for a script without signature.json: the failure family "
                               "(any failure of it counts), regex:PATTERN or script:COMMAND"),
    runs: Optional[int] = typer.Option(None, "--runs", help="runs per version (default: what the reduction "
                                       "measured the failure needs, else 1)"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds before a run is stopped (then skipped)"),
    platform: str = typer.Option("cpu", "--platform", help="cpu or gpu"),
    cache: Optional[Path] = typer.Option(None, "--cache", help="folder of the environments (default: "
                                         "$REDUCER_BISECT_CACHE, else ~/.cache/reducer/bisect)"),
    clear_cache: bool = typer.Option(False, "--clear-cache", help="remove the cached environments and wheels"),
    json_out: bool = typer.Option(False, "--json", help="print the answer as JSON on stdout"),
):
    """Find which releases of a package show the reproducer's failure: where it starts and stops."""
    from reducer.versions.command import run_bisect, target as make_target
    from reducer.versions.envs import Environments

    envs = Environments(cache)
    if clear_cache:
        try:
            freed = envs.clear()
        except ReducerError as exc:
            fail(str(exc), exc.status)
        err.print(f"removed {envs.root} ({human(freed)})", highlight=False)
        if target is None:
            return
    if target is None:
        fail("give a reproducer (a reduce output folder, a corpus case or a script), or --clear-cache", USAGE)
    if jobs < 1 or (runs is not None and runs < 1):
        fail("--jobs and --runs must be at least 1", USAGE)
    if platform not in ("cpu", "gpu"):
        fail(f"--platform must be cpu or gpu, not {platform!r}", USAGE)
    lock = threading.Lock()

    def progress(probe) -> None:
        with lock:
            made = " (environment made)" if probe.installed else ""
            err.print(f"  {package} {probe.version}: {probe.verdict}: {probe.detail} [{probe.seconds:.1f} s{made}]",
                      highlight=False, soft_wrap=True)

    try:
        tgt = make_target(target, oracle, platform, timeout, runs)
        err.print(f"bisecting {package} for {tgt.repro.script}; environments in {envs.root}", highlight=False)
        state, rec = run_bisect(tgt, package, versions, jobs, envs, on_probe=progress)
    except ReducerError as exc:
        fail(str(exc), exc.status)
    show(rec, envs, tgt.folder, json_out)


def show(rec: dict, envs, folder: Path | None, json_out: bool) -> None:
    """The answer on stdout: the sentence, each version tried, the cache; or all of it as JSON."""
    rec["cache_bytes"] = envs.size()
    rec["environments_made"] = list(envs.installed_now)
    if json_out:
        print(json.dumps(rec, indent=2))
        return
    print(rec["summary"][0].upper() + rec["summary"][1:] + ".")
    for t in rec["tried"]:
        print(f"  {t['version']:<12} {t['verdict']:<8} {t['detail']}")
    print(f"cache: {envs.root} ({human(rec['cache_bytes'])}; {len(envs.installed_now)} environments made now)")
    if folder is not None:
        kept = [n for n in ("signature.json", "case.toml", "report.md") if (folder / n).is_file()]
        print(f"recorded in {folder} ({', '.join(kept)})")


def after_reduction(out: Path, package: str, runs: int, platform: str, quiet: bool) -> dict:
    """`reducer reduce … --bisect PACKAGE`: bisect the verified result in its output folder; a failure
    here (say, no package index) is one line in reduce.log and on the terminal, never the reduction's."""
    from reducer.versions.command import run_bisect, target as make_target
    from reducer.versions.envs import Environments

    envs = Environments()
    try:
        tgt = make_target(out, "auto", platform, 300.0, runs)
        _, rec = run_bisect(tgt, package, None, 2, envs)
        line = f"versions: {rec['summary']} (environments in {scrub(str(envs.root))})"
    except ReducerError as exc:
        rec, line = {"error": str(exc)}, f"versions: not bisected: {exc}"
    with open(out / "reduce.log", "a") as log:
        log.write(line + "\n")
    if not quiet:
        err.print(line, highlight=False, soft_wrap=True)
    return rec
