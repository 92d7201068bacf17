"""Adding a `reducer reduce` output folder (or a hunt finding) to the corpus as a new case."""
from __future__ import annotations

import datetime
import json
import re
import shutil
import tempfile
from pathlib import Path

from oracles import kinds
from oracles.base import Signature
from reducer.corpus.cases import (EXTRA_FILES, MAX_ORIGINAL_CHARS, MAX_ORIGINAL_LINES, REPRODUCES, Case, case_id,
                                  load_corpus, oracle_spec)
from reducer.corpus.facts import reduction_facts, strip_header
from reducer.errors import BAD_CASE, DUPLICATE_CASE, NOT_FOUND, USAGE, ReducerError
from reducer.levels.source.representation import tokens

_REDUCING = re.compile(r"\] reducing (?P<path>.+?) \(\d+ tokens\), output in ")


def kept_name(source: Path) -> str:
    """The name an original keeps in its case: `original.py`, or `original.mlir` for a module."""
    return "original" + (Path(source).suffix or ".py")


def find_original(out: Path) -> Path | None:
    """The script a reduction started from, as its reduce.log names it."""
    log = out / "reduce.log"
    if not log.is_file():
        return None
    m = _REDUCING.search(log.read_text())
    if not m:
        return None
    path = Path(m["path"])
    for candidate in (path, out.parent / path, out / path):
        if candidate.is_file():
            return candidate
    return None


def installed_versions() -> dict:
    import importlib.metadata as md
    import platform

    found = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "enzyme-ad"):
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return found


def _read_signature(out: Path) -> tuple[Signature, str, str]:
    out = Path(out)
    if not out.is_dir():
        raise ReducerError(f"{out}: no such folder", NOT_FOUND)
    for name in ("repro.py", "signature.json"):
        if not (out / name).is_file():
            raise ReducerError(f"{out}: not a `reducer reduce` output folder (no {name})", NOT_FOUND)
    try:
        data = json.loads((out / "signature.json").read_text())
        sig = Signature.from_dict(data)
        return sig, oracle_spec(sig), str(data.get("fixed_by") or "")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReducerError(f"{out / 'signature.json'}: unreadable signature: {exc}", BAD_CASE) from None


def _new_id(sig: Signature, root: Path, force: bool) -> str:
    """The case id for `sig` in the corpus at `root`; a twin signature is refused unless `force`."""
    twins = [c for c in load_corpus(root) if kinds.identical(c.signature, sig)]
    if twins and not force:
        raise ReducerError(f"the corpus already has a case with this signature: {twins[0].folder} ({sig}); "
                           f"use --force to add a second one", DUPLICATE_CASE)
    ident = base = case_id(sig)
    n = 2
    while (root / ident).exists():
        ident, n = f"{base}-{n}", n + 1
    return ident


def _versions(out: Path) -> tuple[dict, dict]:
    """The versions the reduction ran with (its env.json), else the installed ones; and env.json itself."""
    info = {}
    if (out / "env.json").is_file():
        try:
            info = json.loads((out / "env.json").read_text())
        except ValueError:
            info = {}
    versions = {k: v for k, v in info.get("packages", {}).items() if k in ("jax", "jaxlib", "enzyme-ad")}
    if info.get("python"):
        versions["python"] = info["python"]
    return versions or installed_versions(), info


def _origin(out: Path, repro_text: str, original: Path | None, info: dict) -> tuple[dict, Path | None, bool]:
    """Where the case came from, the original program and whether it is small enough to keep."""
    origin = reduction_facts(out, strip_header(repro_text))
    source = Path(original) if original else find_original(out)
    if original and not source.is_file():
        raise ReducerError(f"{original}: no such file", NOT_FOUND)
    origin.setdefault("script", source.name if source else "")
    keep_original = False
    if source is not None:
        text = source.read_text()
        keep_original = len(text) <= MAX_ORIGINAL_CHARS and text.count("\n") <= MAX_ORIGINAL_LINES
        origin["original"] = kept_name(source) if keep_original else ""
        if "original_ops" not in origin:
            origin.setdefault("original_tokens", tokens(text))
    origin["reducer"] = info.get("reducer", "")
    return {k: v for k, v in origin.items() if v is not None}, source, keep_original


def _retitled(text: str, title: str | None, pattern: str, line: str) -> str:
    return re.sub(pattern, lambda _: line.format(title=title), text, count=1) if title else text


def _stage(case: Case, out: Path, repro_text: str, title: str | None, source: Path | None, keep: bool) -> None:
    """Write the case into a hidden folder beside its place, then move it there in one step."""
    root, ident = case.folder.parent, case.folder.name
    staging = Path(tempfile.mkdtemp(prefix=f".{ident}.", dir=root))
    try:
        head = r"\A# Reproducer for: .*"
        (staging / "repro.py").write_text(_retitled(repro_text, title, head, "# Reproducer for: {title}"))
        report = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
        if report:
            (staging / "report.md").write_text(_retitled(report, title, r"\A# .*", "# {title}"))
        for name in EXTRA_FILES:
            if (out / name).is_file():
                text = (out / name).read_text()
                if name.endswith(".py"):
                    text = _retitled(text, title, head, "# Reproducer for: {title}")
                (staging / name).write_text(text)
        if keep:
            shutil.copyfile(source, staging / kept_name(source))
        case.folder = staging
        case.save()
        staging.rename(root / ident)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    case.folder = root / ident


def add(out: Path, root: Path, force: bool = False, original: Path | None = None, title: str | None = None,
        expected: str = REPRODUCES) -> Case:
    """Take a `reducer reduce` output folder (or a `reducer hunt` finding) into the corpus at `root`."""
    out, root = Path(out), Path(root)
    if title is not None and (not title.strip() or "\n" in title or "\r" in title):
        raise ReducerError(f"--title must be one line of text, not {title!r}", USAGE)
    sig, spec, fix = _read_signature(out)
    root.mkdir(parents=True, exist_ok=True)
    ident = _new_id(sig, root, force)
    repro_text = (out / "repro.py").read_text()
    versions, info = _versions(out)
    origin, source, keep = _origin(out, repro_text, original, info)
    case = Case(folder=root / ident, id=ident, title=title or sig.title or str(sig), oracle=spec, signature=sig,
                expected=expected, platform=sig.get("platform") or "cpu", date=datetime.date.today().isoformat(),
                versions=versions, origin=origin, fixed_by=fix)
    from reducer.versions.record import for_toml, stored

    case.bisect = for_toml(stored(out))  # which releases fail, when `reducer bisect` found out
    _stage(case, out, repro_text, title, source, keep)
    if not (case.folder / "report.md").is_file():
        from reducer.corpus.report import refresh_report

        refresh_report(case.folder)
    return case
