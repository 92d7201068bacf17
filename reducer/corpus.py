"""The regression corpus: one folder per real bug of the pinned jax / jaxlib / enzyme-ad.

A case folder holds the reproducer (`repro.py`, and `repro.mlir` where the IR level ran), the
bug report (`report.md`), the larger program it was reduced from where that is small enough to be
useful (`original.py`), and `case.toml`: a stable id derived from the signature, a title, the
oracle family, the signature, the expected status, the versions it was seen with, the date and
where it came from.

Checking a case runs its reproducer once, the way `reducer check` does, with the case's own
oracle, and says whether it *still reproduces* (the same signature), is *fixed* (runs cleanly) or
has *changed* (fails with another signature). `add` takes a `reducer reduce` output folder into
the corpus; `refresh_report` re-runs a case and rewrites its report.
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import re
import shutil
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import oracles
from oracles.base import Signature
from reducer import emit, env as envmod
from reducer.errors import (BAD_CASE, DUPLICATE_CASE, NEEDS_INPUT, NO_BACKEND, NO_FAILURE, NOT_FOUND,
                            ReducerError)
from reducer.files import write_atomic
from reducer.inputs import read_script
from reducer.levels.source.representation import tokens

CASE_FILE = "case.toml"
#: what a check can say about a case, and how it is shown
REPRODUCES, FIXED, CHANGED, SKIPPED = "reproduces", "fixed", "changed", "skipped"
LABELS = {REPRODUCES: "still reproduces", FIXED: "fixed", CHANGED: "changed", SKIPPED: "skipped"}
#: an original program is kept next to the reproducer when it is at most this large
MAX_ORIGINAL_LINES = 300
MAX_ORIGINAL_CHARS = 20_000
#: files of a `reducer reduce` output folder that belong in a case, beyond repro.py and report.md
EXTRA_FILES = ("repro.mlir", "pipeline.txt", "repro_mlir.py")


# -- TOML ------------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(data: dict, _prefix: str = "") -> str:
    """TOML text for a dict of scalars, lists of scalars and nested dicts (written as tables)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for key, table in ((k, v) for k, v in data.items() if isinstance(v, dict)):
        name = f"{_prefix}.{_toml_key(key)}" if _prefix else _toml_key(key)
        if lines:
            lines.append("")
        lines.append(f"[{name}]")
        body = dump_toml(table, name)
        if body:
            lines.append(body.rstrip("\n"))
    return "\n".join(lines) + "\n"


# -- cases -----------------------------------------------------------------------------------------

def case_id(sig: Signature) -> str:
    """A stable id: a readable slug of the family and fields, and a short hash of the whole signature."""
    words = " ".join([sig.family, *(v for _, v in sig.fields)])
    slug = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")
    if len(slug) > 72:
        slug = slug[:72].rsplit("-", 1)[0]
    digest = hashlib.sha1(json.dumps([sig.family, [list(f) for f in sig.fields]]).encode()).hexdigest()[:6]
    return f"{slug}-{digest}"


def oracle_spec(sig: Signature) -> str:
    """The `--oracle` that recognises a signature of this family."""
    if sig.family in oracles.FAMILIES:
        return sig.family
    if sig.family == "regex":
        return "regex:" + sig.get("pattern")
    if sig.family == "script":
        return "script:" + sig.get("command")
    raise ValueError(f"no oracle for signature family {sig.family!r}")


@dataclass
class Case:
    """One bug of the corpus, as its `case.toml` describes it."""

    folder: Path
    id: str
    title: str
    oracle: str
    signature: Signature
    expected: str = REPRODUCES
    platform: str = "cpu"
    date: str = ""
    versions: dict = dataclasses.field(default_factory=dict)
    origin: dict = dataclasses.field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.signature.family

    @property
    def repro(self) -> Path:
        return self.folder / "repro.py"

    def to_toml(self) -> str:
        return dump_toml({
            "id": self.id, "title": self.title, "family": self.family, "oracle": self.oracle,
            "expected": self.expected, "platform": self.platform, "date": self.date,
            "signature": {"family": self.signature.family, "title": self.signature.title,
                          "fields": dict(self.signature.fields)},
            "versions": self.versions, "origin": self.origin,
        })

    def save(self) -> None:
        write_atomic(self.folder / CASE_FILE, self.to_toml())


def bad_case(folder: Path, why: str) -> ReducerError:
    return ReducerError(f"{folder}: {why}", BAD_CASE)


def load_case(folder: Path) -> Case:
    """Read a case folder; a missing or broken case.toml or reproducer raises BAD_CASE."""
    folder = Path(folder)
    path = folder / CASE_FILE
    if not path.is_file():
        raise bad_case(folder, f"not a corpus case: no {CASE_FILE}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise bad_case(path, f"broken {CASE_FILE}: {exc}") from None
    try:
        sig_table = data["signature"]
        fields = sig_table.get("fields", {})
        if not isinstance(fields, dict):
            raise TypeError("signature.fields must be a table")
        sig = Signature(str(sig_table["family"]), tuple((str(k), str(v)) for k, v in fields.items()),
                        str(sig_table.get("title", "")))
        case = Case(folder=folder, id=str(data["id"]), title=str(data.get("title") or sig.title or sig),
                    oracle=str(data.get("oracle") or oracle_spec(sig)), signature=sig,
                    expected=str(data.get("expected", REPRODUCES)), platform=str(data.get("platform", "cpu")),
                    date=str(data.get("date", "")), versions=dict(data.get("versions", {})),
                    origin=dict(data.get("origin", {})))
    except KeyError as exc:
        raise bad_case(path, f"broken {CASE_FILE}: missing key {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise bad_case(path, f"broken {CASE_FILE}: {exc}") from None
    if case.expected not in (REPRODUCES, FIXED, CHANGED):
        raise bad_case(path, f"broken {CASE_FILE}: expected must be one of reproduces, fixed, changed, "
                             f"not {case.expected!r}")
    if not case.repro.is_file():
        raise bad_case(folder, "the case has no repro.py")
    try:
        read_script(case.repro)
        oracles.make_oracle(case.oracle, case.platform)
    except ReducerError as exc:
        raise bad_case(folder, f"unusable repro.py: {str(exc).split(': ', 1)[-1]}") from None
    except ValueError as exc:
        raise bad_case(path, f"broken {CASE_FILE}: {exc}") from None
    return case


def case_folders(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def load_corpus(root: Path, names: list[str] | tuple[str, ...] = ()) -> list[Case]:
    """The cases of the corpus at `root`, or only those named (by id, folder name or path)."""
    root = Path(root)
    if not root.is_dir():
        raise ReducerError(f"{root}: no corpus folder here", NOT_FOUND)
    if not names:
        return [load_case(folder) for folder in case_folders(root)]
    cases = []
    for name in names:
        folder = Path(name) if Path(name).is_dir() else root / name
        if not folder.is_dir():
            raise ReducerError(f"{name}: no such case in {root}", NOT_FOUND)
        cases.append(load_case(folder))
    return cases


# -- checking --------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What re-running one case showed."""

    case: Case
    status: str
    detail: str
    seconds: float
    seen: Signature | None = None
    excerpt: str = ""

    @property
    def label(self) -> str:
        return LABELS[self.status]

    @property
    def as_expected(self) -> bool:
        return self.status in (self.case.expected, SKIPPED)


def run_once(repro: Path, spec: str, wanted: Signature, platform: str = "cpu",
             timeout: float | None = None) -> tuple[str, str, Signature | None, str, list[str]]:
    """Run a reproducer once as `reducer check` does: (status, detail, signature seen, excerpt, private paths)."""
    from reducer.reduce import Options, Reduction

    job = Reduction(Path(repro), None, Options(oracle=spec, platform=platform, timeout=timeout, jobs=1, runs=1,
                                               warm=False))
    private = [str(job.scratch), str(Path(repro).resolve().parent)]
    try:
        est = job.establish(runs=1)
    except ReducerError as exc:
        message = str(exc).split(": ", 1)[-1]
        if exc.status == NO_FAILURE:
            return FIXED, "runs cleanly", None, "", private
        if exc.status == NO_BACKEND:
            return SKIPPED, message, None, "", private
        if exc.status == NEEDS_INPUT:
            return CHANGED, message, None, "", private
        saw = message.split("; saw: ", 1)[1] if "; saw: " in message else message
        return CHANGED, f"fails differently: {saw}", None, "", private
    finally:
        job.close()
    if est.run is not None:
        same, seen = est.oracle.judge(wanted, est.run)
        seen = seen or est.signature
    else:
        same, seen = est.oracle.same(wanted, est.signature), est.signature
    excerpt = seen.excerpt or est.signature.excerpt
    if same:
        return REPRODUCES, str(wanted), seen, excerpt, private
    return CHANGED, f"fails differently: {seen}", seen, excerpt, private


def check_case(case: Case, timeout: float | None = None) -> Outcome:
    start = time.monotonic()
    status, detail, seen, excerpt, _ = run_once(case.repro, case.oracle, case.signature, case.platform, timeout)
    return Outcome(case, status, detail, time.monotonic() - start, seen, excerpt)


def check_all(cases: list[Case], jobs: int = 2, timeout: float | None = None, on_done=None) -> list[Outcome]:
    """Check every case, `jobs` at a time; `on_done(outcome)` is called as each one finishes."""
    def one(case: Case) -> Outcome:
        outcome = check_case(case, timeout)
        if on_done:
            on_done(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, cases))


def summary_table(outcomes: list[Outcome]) -> str:
    """A plain-text table, one row per case, and a closing count."""
    rows = [("case", "family", "expected", "status", "seconds", "detail")]
    for o in outcomes:
        mark = "" if o.as_expected else "  <-- differs"
        rows.append((o.case.folder.name, o.case.family, LABELS[o.case.expected], o.label + mark, f"{o.seconds:.1f}",
                     o.detail if o.status != REPRODUCES else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:5], widths)) + ("  " + r[5] if r[5] else "")
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in LABELS}
    differ = sum(1 for o in outcomes if not o.as_expected)
    lines.append("")
    lines.append(f"{len(outcomes)} cases: {counts[REPRODUCES]} still reproduce, {counts[FIXED]} fixed, "
                 f"{counts[CHANGED]} changed" + (f", {counts[SKIPPED]} skipped" if counts[SKIPPED] else "")
                 + f"; {differ} differ from the expected status")
    return "\n".join(lines)


def junit_xml(outcomes: list[Outcome], name: str = "reducer corpus") -> str:
    """JUnit XML: one testcase per case, a failure where the status differs from the expected one."""
    suite = ET.Element("testsuite", name=name, tests=str(len(outcomes)),
                       failures=str(sum(1 for o in outcomes if not o.as_expected)), errors="0",
                       skipped=str(sum(1 for o in outcomes if o.status == SKIPPED)),
                       time=f"{sum(o.seconds for o in outcomes):.2f}")
    for o in outcomes:
        tc = ET.SubElement(suite, "testcase", classname=f"corpus.{o.case.family}", name=o.case.folder.name,
                           time=f"{o.seconds:.2f}")
        if o.status == SKIPPED:
            ET.SubElement(tc, "skipped", message=o.detail)
        elif not o.as_expected:
            failure = ET.SubElement(tc, "failure",
                                    message=f"expected {LABELS[o.case.expected]}, got {o.label}: {o.detail}")
            failure.text = f"{o.case.title}\nsignature: {o.case.signature}\n{o.detail}"
        out = ET.SubElement(tc, "system-out")
        out.text = f"{o.label}: {o.detail}"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


# -- adding a reduction ----------------------------------------------------------------------------

_MADE = re.compile(r"\((?P<levels>[\w, -]+) level\) from `(?P<script>[^`]+)`: (?P<orig>\d+) → (?P<final>\d+) Python "
                   r"tokens in (?P<secs>\d+) s, (?P<tested>\d+) candidates tested, (?P<acc>\d+) accepted, "
                   r"(?P<hits>\d+) cache hits")
_VERIFIED = re.compile(r"^Verified in a fresh interpreter: (?P<v>.*?)\.?$", re.M)
_REDUCING = re.compile(r"\] reducing (?P<path>.+?) \(\d+ tokens\), output in ")


def strip_header(repro_text: str) -> str:
    """The reproducer's code without the comment header `reducer reduce` puts on top."""
    lines = repro_text.splitlines()
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "\n".join(lines[i:]) + "\n"


def reduction_facts(out: Path, code: str) -> dict:
    """How the reproducer was made, read from the report `reducer reduce` wrote."""
    report = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
    facts: dict = {}
    m = _MADE.search(report)
    if m:
        facts = {"script": m["script"], "original_tokens": int(m["orig"]), "reduced_tokens": int(m["final"]),
                 "seconds": int(m["secs"]), "tested": int(m["tested"]), "accepted": int(m["acc"]),
                 "cache_hits": int(m["hits"]), "levels": [w.strip() for w in m["levels"].split(",")]}
    else:
        facts = {"reduced_tokens": tokens(code)}
    v = _VERIFIED.search(report)
    if v:
        facts["verified"] = v["v"]
    return facts


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


def add(out: Path, root: Path, force: bool = False, original: Path | None = None, title: str | None = None,
        expected: str = REPRODUCES) -> Case:
    """Take a `reducer reduce` output folder into the corpus at `root` as a new case."""
    out = Path(out)
    if not out.is_dir():
        raise ReducerError(f"{out}: no such folder", NOT_FOUND)
    for name in ("repro.py", "signature.json"):
        if not (out / name).is_file():
            raise ReducerError(f"{out}: not a `reducer reduce` output folder (no {name})", NOT_FOUND)
    try:
        sig = Signature.from_dict(json.loads((out / "signature.json").read_text()))
        spec = oracle_spec(sig)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReducerError(f"{out / 'signature.json'}: unreadable signature: {exc}", BAD_CASE) from None
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    existing = load_corpus(root)
    twins = [c for c in existing if c.signature.family == sig.family and c.signature.fields == sig.fields]
    if twins and not force:
        raise ReducerError(f"the corpus already has a case with this signature: {twins[0].folder} ({sig}); "
                           f"use --force to add a second one", DUPLICATE_CASE)
    ident = base = case_id(sig)
    n = 2
    while (root / ident).exists():
        ident, n = f"{base}-{n}", n + 1
    repro_text = (out / "repro.py").read_text()
    info = {}
    if (out / "env.json").is_file():
        try:
            info = json.loads((out / "env.json").read_text())
        except ValueError:
            info = {}
    versions = {k: v for k, v in info.get("packages", {}).items() if k in ("jax", "jaxlib", "enzyme-ad")}
    if info.get("python"):
        versions["python"] = info["python"]
    versions = versions or installed_versions()
    origin = reduction_facts(out, strip_header(repro_text))
    source = Path(original) if original else find_original(out)
    if original and not source.is_file():
        raise ReducerError(f"{original}: no such file", NOT_FOUND)
    origin.setdefault("script", source.name if source else "")
    keep_original = False
    if source is not None:
        text = source.read_text()
        keep_original = len(text) <= MAX_ORIGINAL_CHARS and text.count("\n") <= MAX_ORIGINAL_LINES
        origin["original"] = "original.py" if keep_original else ""
        origin.setdefault("original_tokens", tokens(text))
    origin["reducer"] = info.get("reducer", "")
    case = Case(folder=root / ident, id=ident, title=title or sig.title or str(sig), oracle=spec, signature=sig,
                expected=expected, platform=sig.get("platform") or "cpu", date=datetime.date.today().isoformat(),
                versions=versions, origin={k: v for k, v in origin.items() if v is not None})
    staging = Path(tempfile.mkdtemp(prefix=f".{ident}.", dir=root))
    try:
        if title:
            repro_text = re.sub(r"\A# Reproducer for: .*", lambda _: f"# Reproducer for: {title}", repro_text, count=1)
        (staging / "repro.py").write_text(repro_text)
        report = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
        if report and title:
            report = re.sub(r"\A# .*", lambda _: f"# {title}", report, count=1)
        if report:
            (staging / "report.md").write_text(report)
        for name in EXTRA_FILES:
            if (out / name).is_file():
                text = (out / name).read_text()
                if title and name.endswith(".py"):
                    text = re.sub(r"\A# Reproducer for: .*", lambda _: f"# Reproducer for: {title}", text, count=1)
                (staging / name).write_text(text)
        if keep_original:
            shutil.copyfile(source, staging / "original.py")
        case.folder = staging
        case.save()
        staging.rename(root / ident)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    case.folder = root / ident
    if not (case.folder / "report.md").is_file():
        refresh_report(case.folder)
    return case


# -- reports ---------------------------------------------------------------------------------------

def refresh_report(folder: Path, timeout: float | None = None) -> tuple[Path, str, str]:
    """Re-run a case (or a `reducer reduce` output folder) once and rewrite its report.md.

    Returns the report's path, the status and its detail.
    """
    folder = Path(folder)
    if (folder / CASE_FILE).is_file() or not (folder / "signature.json").is_file():
        case = load_case(folder)
        sig, spec, platform, origin, title = case.signature, case.oracle, case.platform, case.origin, case.title
    else:
        if not (folder / "repro.py").is_file():
            raise bad_case(folder, "no repro.py")
        try:
            sig = Signature.from_dict(json.loads((folder / "signature.json").read_text()))
            spec = oracle_spec(sig)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise bad_case(folder / "signature.json", f"unreadable signature: {exc}") from None
        platform, title = sig.get("platform") or "cpu", sig.title or str(sig)
        origin = reduction_facts(folder, strip_header((folder / "repro.py").read_text()))
    code = strip_header((folder / "repro.py").read_text())
    status, detail, seen, excerpt, private = run_once(folder / "repro.py", spec, sig, platform, timeout)
    info = envmod.collect(platform=platform)
    today = datetime.date.today().isoformat()
    if status == REPRODUCES:
        verified = f"re-run by `reducer report` on {today}: {LABELS[status]}"
        verified = f"{origin['verified']}; {verified}" if origin.get("verified") else f"yes ({verified})"
    else:
        verified = f"no: re-run by `reducer report` on {today}: {LABELS[status]}: {detail}"
        excerpt = excerpt or f"(the reproducer no longer shows this failure: {LABELS[status]}: {detail})"
    summary = emit.ReductionSummary(
        script_name=str(origin.get("script") or "the original program"),
        original_tokens=int(origin.get("original_tokens", 0) or 0),
        final_tokens=int(origin.get("reduced_tokens", tokens(code)) or tokens(code)),
        seconds=float(origin.get("seconds", 0) or 0), tested=int(origin.get("tested", 0) or 0),
        accepted=int(origin.get("accepted", 0) or 0), cache_hits=int(origin.get("cache_hits", 0) or 0),
        verified=verified, levels=list(origin.get("levels") or ["source"]))
    ir = {}
    if (folder / "repro.mlir").is_file():
        lines = (folder / "repro.mlir").read_text().splitlines()
        while lines and lines[0].startswith("//"):  # the pipeline, shown on its own below
            lines.pop(0)
        ir["mlir"] = "\n".join(lines) + "\n"
        if (folder / "pipeline.txt").is_file():
            ir["pipeline"] = (folder / "pipeline.txt").read_text().strip()
        if (folder / "repro_mlir.py").is_file():
            ir["mlir_runner"] = "repro_mlir.py"
    text = emit.report(code, dataclasses.replace(sig, title=title), excerpt, info, summary,
                       private_paths=tuple(private), **ir)
    write_atomic(folder / "report.md", text)
    return folder / "report.md", status, detail
