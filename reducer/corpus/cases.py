"""Corpus cases: what `case.toml` holds, reading and finding cases, and the stable case ids."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import oracles
from oracles import kinds, oracle_spec
from oracles.base import Signature
from reducer.counterfactual import PROLOGUES
from reducer.errors import BAD_CASE, NOT_FOUND, ReducerError
from reducer.files import write_atomic
from reducer.readers.inputs import read_script
from reducer.tomlfile import dump_toml

CASE_FILE = "case.toml"
#: what a check can say about a case, and how it is shown
REPRODUCES, FIXED, CHANGED, SKIPPED = "reproduces", "fixed", "changed", "skipped"
#: the reproducer shows the failure, but its own check fails with the bug taken away too: reduce it again
UNCONDITIONAL = "unconditional"
LABELS = {REPRODUCES: "still reproduces", FIXED: "fixed", CHANGED: "changed", SKIPPED: "skipped",
          UNCONDITIONAL: "fails without the bug"}
#: an original program is kept next to the reproducer when it is at most this large
MAX_ORIGINAL_LINES = 300
MAX_ORIGINAL_CHARS = 20_000
#: the files of an output folder a case keeps beside repro.py: the module the IR level reduced, and what
#: runs it (`repro_mlir.py` for Enzyme-JAX's pipeline, `repro_xla.py` and its inputs for XLA)
EXTRA_FILES = ("repro.mlir", "pipeline.txt", "repro_mlir.py", "repro.hlo", "repro_xla.py", "repro_xla_inputs.npz")
#: the runners of a module the IR level reduced after a script: a case with one is a script's
MODULE_RUNNERS = ("repro_mlir.py", "repro_xla.py")


def case_id(sig: Signature) -> str:
    """A stable id: a readable slug of the family and fields, and a short hash of the whole signature."""
    words = " ".join([sig.family, *(v for _, v in sig.fields)])
    slug = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")
    if len(slug) > 72:
        slug = slug[:72].rsplit("-", 1)[0]
    digest = hashlib.sha1(json.dumps([sig.family, [list(f) for f in sig.fields]]).encode()).hexdigest()[:6]
    return f"{slug}-{digest}"


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
    upstream: str = ""  # the bug's report upstream, when one was filed
    bisect: dict = dataclasses.field(default_factory=dict)  # per package: which releases fail (reducer bisect)
    #: the bug taken away, where the family does not say it (`reducer.counterfactual`): the reproducer's
    #: own check passes with it ("numpy", "nan-check" …)
    fixed_by: str = ""

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
            **({"upstream": self.upstream} if self.upstream else {}),
            **({"bisect": self.bisect} if self.bisect else {}),
            **({"fixed_by": self.fixed_by} if self.fixed_by else {}),
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
                    origin=dict(data.get("origin", {})), upstream=str(data.get("upstream", "")),
                    bisect=dict(data.get("bisect", {})), fixed_by=str(data.get("fixed_by", "")))
    except KeyError as exc:
        raise bad_case(path, f"broken {CASE_FILE}: missing key {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise bad_case(path, f"broken {CASE_FILE}: {exc}") from None
    if case.fixed_by and case.fixed_by not in PROLOGUES:
        raise bad_case(path, f"broken {CASE_FILE}: no fix {case.fixed_by!r} (known: {', '.join(PROLOGUES)})")
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


def default_root() -> Path:
    """./corpus when there is one, else the corpus next to the installed (editable) project."""
    here = Path.cwd() / "corpus"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "corpus"


def known_line(sig: Signature, root: Path | None = None) -> str:
    """"known: <case id> — <title>" (and its upstream report) when the corpus has this failure, else ""."""
    root = Path(root) if root else default_root()
    case = find_known(sig, root) if root.is_dir() else None
    if case is None:
        return ""
    return f"known: {case.id} — {case.title}" + (f" ({case.upstream})" if case.upstream else "")


def find_known(sig: Signature, root: Path) -> Case | None:
    """The case of the corpus at `root` whose signature is `sig` (family and fields), if any;
    unreadable cases are passed over."""
    for folder in case_folders(root):
        try:
            case = load_case(folder)
        except ReducerError:
            continue
        if kinds.identical(case.signature, sig):
            return case
    return None


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
