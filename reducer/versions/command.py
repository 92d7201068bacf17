"""`reducer bisect` and the version runs of `reducer corpus check --versions`: what the reproducer is,
which versions to try, one probe per version (environment, run, verdict), and the answer."""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import oracles
from oracles.base import Signature
from reducer.errors import NOT_FOUND, USAGE, ReducerError
from reducer.readers.inputs import read_script
from reducer.versions import record
from reducer.versions.envs import Environments
from reducer.versions.index import LOCKSTEP, choose_versions, installed_version, release
from reducer.versions.packages import contemporary_pins, imported_distributions, pins_for
from reducer.versions.probe import SKIPPED, Probe, Reproducer, oracle_for, run_in, timed
from reducer.versions.search import Bisection, bisect


@dataclass
class Target:
    """What `reducer bisect` was given: the reproducer, and the folder its answer is written to."""

    repro: Reproducer
    folder: Path | None  # a reduce output folder or corpus case: signature.json, report.md, case.toml


def _wanted(folder: Path) -> tuple[Signature | None, str, int]:
    """The signature, oracle and runs per version that a reduce output folder (signature.json) or a
    corpus case (case.toml: its `signature` table and `oracle`) records."""
    sig_file, case_file = folder / "signature.json", folder / "case.toml"
    source = case_file if case_file.is_file() else sig_file
    if not source.is_file():
        return None, "", 1
    try:
        if source is case_file:
            data = tomllib.loads(case_file.read_text(encoding="utf-8"))
            sig = Signature.from_dict(data["signature"])
            return sig, str(data.get("oracle") or oracles.oracle_spec(sig)), 1
        data = json.loads(sig_file.read_text())
        sig = Signature.from_dict(data)
        return sig, oracles.oracle_spec(sig), int(data.get("runs", 1) or 1)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReducerError(f"{source}: unreadable signature: {exc}", NOT_FOUND) from None


def target(path: Path, oracle: str, platform: str, timeout: float, runs: int | None) -> Target:
    """The reproducer in DIR (repro.py), or a script (with signature.json beside it, or `--oracle`)."""
    path = Path(path)
    if not path.exists():
        raise ReducerError(f"{path}: no such file or folder", NOT_FOUND)
    folder = path if path.is_dir() else None
    script = path / "repro.py" if path.is_dir() else path
    if script.suffix == ".mlir":  # the IR level writes a Python runner next to the module
        runner = next((script.parent / n for n in ("repro_mlir.py", "repro.py") if (script.parent / n).is_file()), None)
        if runner is None:
            raise ReducerError(f"{script}: no Python runner (repro_mlir.py or repro.py) beside it", NOT_FOUND)
        script = runner
    if not script.is_file():
        raise ReducerError(f"{path}: no repro.py here: give a `reducer reduce` output folder, a corpus case or "
                           f"a script", NOT_FOUND)
    source = read_script(script)
    home = folder or script.parent
    wanted, spec, recorded_runs = _wanted(home) if oracle == "auto" else (None, oracle, 1)
    if wanted is not None and folder is None:
        folder = home
    if wanted is None and spec == "":
        raise ReducerError(f"{script}: no signature.json beside it; give --oracle FAMILY (any failure of that "
                           f"family then counts) or a `reducer reduce` output folder", USAGE)
    try:
        judge = oracle_for(spec, wanted, platform)
    except ValueError as exc:
        raise ReducerError(f"--oracle: {exc}", USAGE) from None
    repro = Reproducer(script=script, source=source, oracle=judge, wanted=wanted, runs=runs or recorded_runs,
                       platform=platform, timeout=timeout)
    return Target(repro, folder)


def prober(package: str, repro: Reproducer, envs: Environments):
    """The probe of one version: its environment (made once, then cached) and the reproducer's runs there."""
    needed = sorted(set(imported_distributions(repro.source)) | {package})
    companions = [n for n in needed if n not in (package, LOCKSTEP.get(package))]

    def attempt(version: str, pins: dict) -> Probe:
        shown = " ".join(f"{n}=={v}" for n, v in sorted(pins.items()) if n in needed)
        made = len(envs.installed_now)
        python, why = envs.python(pins)
        if python is None:
            return Probe(version, SKIPPED, why, pins=shown)
        verdict, detail = run_in(python, repro)
        return Probe(version, verdict, detail, pins=shown, installed=len(envs.installed_now) > made)

    def work(version: str) -> Probe:
        pins, why = pins_for(package, version, needed, envs)
        first = attempt(version, pins) if pins is not None else Probe(version, SKIPPED, why)
        if first.verdict != SKIPPED or not companions or first.detail.startswith("requires Python"):
            return first
        # the installed companions may not suit this version: try the ones of its own time
        older, _ = contemporary_pins(package, version, needed, envs)
        if older is None or older == pins:
            return first
        again = attempt(version, older)
        if again.verdict == SKIPPED:
            first.detail += f"; with the companions of its time ({again.pins}): {again.detail}"
            first.installed |= again.installed
            return first
        again.installed |= first.installed
        again.detail += f" (with the companions of its time; with {first.pins or 'the installed ones'}: {first.detail})"
        return again

    return lambda version: timed(version, lambda: work(version))


def not_installable(package: str, versions: list[str]) -> dict[str, Probe]:
    """Versions settled without a run: nothing of theirs installs with this Python on this platform."""
    known = {}
    for version in versions:
        why = release(package, version).why_not_installable()
        if why:
            known[version] = Probe(version, SKIPPED, why)
    return known


def run_bisect(tgt: Target, package: str, spec: str | None, jobs: int, envs: Environments,
               on_probe=None) -> tuple[Bisection, dict]:
    """Bisect `package` over the versions `spec` names (default: the last 12 months and the installed one)."""
    versions = choose_versions(package, spec)
    if not versions:
        raise ReducerError(f"no {package} releases to try (--versions {spec or 'default: the last 12 months'})",
                           USAGE)
    known = not_installable(package, versions)
    state = bisect(package, versions, prober(package, tgt.repro, envs), jobs=jobs,
                   anchor=installed_version(package), on_probe=on_probe, known=known)
    rec = record.to_record(state, cache=str(envs.root))
    if tgt.folder is not None:
        record.save(tgt.folder, rec)
    return state, rec


def parse_versions_option(text: str) -> tuple[str, str]:
    """`PACKAGE=LIST` (LIST: `A,B,C` or `A..B`) of `corpus check --versions`."""
    package, sep, spec = text.partition("=")
    if not sep or not package.strip() or not spec.strip():
        raise ReducerError(f"--versions {text!r}: expected PACKAGE=LIST, as jax=0.10.1,0.10.2 or jax=0.9.0..0.10.2",
                           USAGE)
    return package.strip(), spec.strip()
