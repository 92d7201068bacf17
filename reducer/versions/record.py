"""The answer of a bisection in words, and where it is kept.

`summary` says it in one sentence ("fails since jax 0.10.2; worked in 0.10.1", "fails in every
release from 0.8.0 to 0.10.2"); `to_record` is what `signature.json` (key `versions`) and a corpus
case's `case.toml` (table `bisect`) keep, one entry per package; `markdown` renders the records as
the report's "Versions" section; `save` writes all three into a reduction's output folder or a
corpus case.
"""
from __future__ import annotations

import datetime
import json
import re
import tomllib
from pathlib import Path

from reducer.files import scrub, write_atomic
from reducer.tomlfile import dump_toml
from reducer.versions.probe import FAILS, SKIPPED, WORKS
from reducer.versions.search import Bisection, skipped_between

SECTION = "## Versions"


def _tried(state: Bisection, verdict: str) -> list[str]:
    return [state.versions[i] for i in state.indices(verdict)]


def _skipped_note(state: Bisection, low: int | None, high: int | None) -> str:
    between = [p.version for p in skipped_between(state, low, high)]
    return f" (or one of {', '.join(between)} between, skipped)" if between else ""


def summary(state: Bisection) -> str:
    """The answer in one sentence."""
    pkg = state.package
    tried = [v for v in state.versions if v in state.probes]
    fails, works = _tried(state, FAILS), _tried(state, WORKS)
    if not fails:
        if not works:
            return f"no {pkg} version tried could run the reproducer (every one was skipped)"
        return f"the failure shows in none of the {len(tried)} {pkg} versions tried ({tried[0]} to {tried[-1]})"
    first, last = state.versions[state.first_bad], state.versions[state.last_bad]
    good, fixed = state.last_good, state.first_fixed
    if good is None and fixed is None:
        text = f"fails in every {pkg} release from {first} to {last}" if first != last else \
            f"fails in {pkg} {first}, the only version that could run it"
    elif good is None:
        text = f"fails in every {pkg} release tried from {first} to {last}"
    else:
        text = f"fails since {pkg} {first}{_skipped_note(state, good, state.first_bad)}; " \
               f"worked in {state.versions[good]}"
    if fixed is not None:
        text += f"; fixed in {state.versions[fixed]}{_skipped_note(state, state.last_bad, fixed)}" \
                f" (last failing: {last})"
    elif good is not None and last != first:
        text += f"; still fails in {last}, the newest tried"
    older = skipped_between(state, None, state.first_bad) if good is None else []
    newer = skipped_between(state, state.last_bad, None) if fixed is None else []
    for which, skipped, nearest in (("older", older, -1), ("newer", newer, 0)):
        if skipped:
            named = ", ".join(p.version for p in skipped) if len(skipped) <= 2 else \
                f"{skipped[0].version} to {skipped[-1].version}, {len(skipped)} releases"
            text += f"; {which} releases skipped ({named}; {skipped[nearest].version}: {skipped[nearest].detail[:160]})"
    return text


def to_record(state: Bisection, cache: str = "") -> dict:
    at = lambda i: state.versions[i] if i is not None else ""  # noqa: E731
    return {"package": state.package, "summary": summary(state), "first_failing": at(state.first_bad),
            "last_working": at(state.last_good), "last_failing": at(state.last_bad),
            "first_fixed": at(state.first_fixed), "date": datetime.date.today().isoformat(),
            "candidates": list(state.versions),
            "tried": [state.probes[v].to_dict() for v in state.versions if v in state.probes],
            "cache": scrub(cache)}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(records: dict) -> str:
    """The report's "Versions" section for the records of one or more packages."""
    out = [SECTION, ""]
    for package, rec in records.items():
        out += [rec["summary"][0].upper() + rec["summary"][1:] + ".", ""]
        out += [f"| {package} | outcome | environment | detail |", "|---|---|---|---|"]
        for t in rec["tried"]:
            out.append(f"| {t['version']} | {t['verdict']} | {_cell(t.get('environment', ''))} "
                       f"| {_cell(t['detail'])} |")
        tried = {t["version"] for t in rec["tried"]}
        untried = [v for v in rec.get("candidates", []) if v not in tried]
        skipped = sum(1 for t in rec["tried"] if t["verdict"] == SKIPPED)
        out += ["", f"Found by `reducer bisect` on {rec['date']}: {len(tried)} of {len(rec.get('candidates', []))} "
                    f"{package} versions run, {skipped} skipped (skipped versions count as neither working nor "
                    f"failing)" + (f"; not run, as a binary search assumes one change between the versions "
                                   f"around them: {', '.join(untried)}" if untried else "") + ".", ""]
    return "\n".join(out)


def insert_section(report: str, section: str) -> str:
    """`report` with its collapsed Versions section replaced by `section` (or a Versions section of
    reports written before sections collapsed), or `section` put before the environment's."""
    from reducer.bug_report import ENVIRONMENT, VERSIONS, details, opening

    block = "\n".join(details(VERSIONS, section.rstrip("\n").splitlines()))
    for pattern in (rf"^{re.escape(opening(VERSIONS))}\n.*?^</details>\n+",
                    rf"^{re.escape(SECTION)}\n.*?(?=^## |^<details>|\Z)"):
        found = re.compile(pattern, re.M | re.S)
        if found.search(report):
            return found.sub(lambda _: block, report, count=1)
    for before in ("\n" + opening(ENVIRONMENT), "\n## Environment"):
        at = report.find(before)
        if at >= 0:
            return report[:at + 1] + block + report[at + 1:]
    return report.rstrip("\n") + "\n\n" + block


def stored(folder: Path) -> dict:
    """The version records a folder keeps (signature.json, else case.toml), by package."""
    sig = Path(folder) / "signature.json"
    if sig.is_file():
        try:
            found = json.loads(sig.read_text()).get("versions")
            if isinstance(found, dict) and found:
                return found
        except ValueError:
            pass
    case = Path(folder) / "case.toml"
    if case.is_file():
        try:
            found = dict(tomllib.loads(case.read_text()).get("bisect", {}))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return {}
        return {p: {**r, "tried": [_with_environment(_as_dict(t), r.get("environments", []))
                                   for t in r.get("tried", [])]}
                for p, r in found.items()}
    return {}


_TRIED = re.compile(r"^(?P<version>\S+): (?P<verdict>\w+) \((?P<detail>.*)\)$", re.S)


def _as_dict(entry) -> dict:
    """A tried version as case.toml keeps it ("0.10.1: works (runs cleanly)") or as signature.json does."""
    if isinstance(entry, dict):
        return entry
    m = _TRIED.match(str(entry))
    return m.groupdict() if m else {"version": str(entry), "verdict": "", "detail": ""}


def note_runs(folder: Path, runs: int, rate: float) -> None:
    """Keep in signature.json how often a flaky failure showed, and how many runs a verdict needs."""
    sig = Path(folder) / "signature.json"
    if sig.is_file():
        data = json.loads(sig.read_text())
        data.update(runs=runs, rate=round(rate, 3))
        write_atomic(sig, json.dumps(data, indent=2) + "\n")


def for_toml(records: dict) -> dict:
    """The records as case.toml keeps them: each version tried as one line."""
    return {p: {k: v for k, v in r.items() if k != "tried"} | {
        "tried": [f"{t['version']}: {t['verdict']} ({t['detail']})" for t in r.get("tried", [])],
        "environments": [f"{t['version']}: {t['environment']}" for t in r.get("tried", []) if t.get("environment")]}
        for p, r in records.items()}


def _with_environment(entry: dict, environments: list[str]) -> dict:
    for line in environments:
        version, _, pins = str(line).partition(": ")
        if version == entry.get("version"):
            return {**entry, "environment": pins}
    return entry


def save(folder: Path, record: dict) -> list[Path]:
    """Keep `record` in the folder's signature.json and case.toml, and its report's Versions section."""
    folder = Path(folder)
    written = []
    records = {**stored(folder), record["package"]: record}
    sig = folder / "signature.json"
    if sig.is_file():
        data = json.loads(sig.read_text())
        data["versions"] = records
        write_atomic(sig, json.dumps(data, indent=2) + "\n")
        written.append(sig)
    case = folder / "case.toml"
    if case.is_file():  # a corpus case: the versions keep its `bisect` table, the corpus the rest
        data = tomllib.loads(case.read_text(encoding="utf-8"))
        data["bisect"] = for_toml(records)
        write_atomic(case, dump_toml(data))
        written.append(case)
    report = folder / "report.md"
    if report.is_file():
        write_atomic(report, insert_section(report.read_text(), markdown(records)))
        written.append(report)
    return written
