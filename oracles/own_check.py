"""The program's own check fails: an `assert`, a `raise` in the program's own code, NumPy's or
unittest's `assert…` helpers, or an exit with a message (`raise SystemExit("diverged")`,
`print(…); sys.exit(1)`).

These are the failures users meet most: `assert jnp.isfinite(grads).all()`,
`np.testing.assert_allclose(enzyme_grad, jax_grad)`, `assert loss < previous`. No library raised
them, so the other families do not claim them; `auto` tries this family last. A plain error of the
program's code that no check raised (a `TypeError` from `1 + "a"`, a `KeyError`) is not one.

A check failing on a NaN or an Inf becomes the `nonfinite` family once the operation that made the
value is known (`reducer.faults.nonfinite`, attached to the run): `nonfinite: in=grad op=sqrt
from=norm`.

Signature: the exception type; the kind of check (`assert`, `raise`, the testing helper's name such
as `assert_allclose`, or `exit`); what the check reads, from its line and message (`nonfinite`
values, two values `close`, an `order` between values, or a `value`); and the message's first line
with numbers and arrays masked, so that a candidate slipping to another check of the program is
not the same failure.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from oracles.base import TOOL_FRAME, Oracle, Signature, library_path, normalize_message
from oracles.kinds import decided_by_program, nonfinite
from oracles.library_check import library_check
from oracles.nonfinite import inside_call, programs_fix
from oracles.nonfinite import signature as nonfinite_signature
from oracles.outcome import RunResult

_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)$')
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
#: where testing helpers live: a check raised there is the caller's own check
_TESTING = re.compile(r"/numpy/testing/|/unittest/case\.py$|/jax/_src/(?:public_)?test_util\.py$|/chex/|/_pytest/")
#: what pytest raises for a test's own check (`pytest.fail`, a `pytest.raises` that saw nothing raised)
_PYTEST_FAILED = "Failed"
_HELPER = re.compile(r"\b(assert_?[A-Za-z_]*)\s*\(")
_ARRAY = re.compile(r"\[[^\[\]]*\]")
_NONFINITE = re.compile(r"\b(isfinite|isnan|isinf|nan|inf|nonfinite|non-finite|finite)\b", re.I)
_CLOSE = re.compile(r"allclose|isclose|array_equal|almost_equal|AllClose|approx|Not equal to tolerance|"
                    r"Arrays are not", re.I)
#: what a check reads, as the report's title says it
READS = {"nonfinite": "on a non-finite value (NaN or Inf)", "close": "comparing two values",
         "order": "on an ordering of values", "value": "on a value"}
_ORDER = re.compile(r"(?<![<>=!])(?:<=?|>=?)(?![<>=])")


class Frame(NamedTuple):
    """One frame of a traceback: its file, line and function, the source line shown, and whether it
    is the program's own (not an installed package's or the standard library's)."""

    file: str
    line: int
    func: str
    source: str
    own: bool


def _traceback(text: str) -> tuple[list[Frame], list[str]] | None:
    """The frames of the last traceback in `text`, and the lines of the exception it ends with."""
    start = text.rfind("Traceback (most recent call last)")
    if start < 0:
        return None
    lines = text[start:].splitlines()[1:]
    frames, k = [], 0
    while k < len(lines) and (lines[k].startswith(" ") or not lines[k].strip()):
        m = _FRAME.match(lines[k])
        if m:
            nxt = lines[k + 1] if k + 1 < len(lines) else ""
            source = nxt.strip() if nxt.startswith("    ") and not _FRAME.match(nxt) else ""
            frames.append(Frame(m.group("file"), int(m.group("line")), m.group("func"), source, _own(m.group("file"))))
        k += 1
    return (frames, lines[k:]) if frames else None


def own_frames(text: str) -> list[Frame]:
    """The frames of the last traceback in `text` (the program's own and the libraries')."""
    found = _traceback(text)
    return found[0] if found else []


def _own(path: str) -> bool:
    """Whether a frame's file is the program's (not an installed package, the standard library or
    reducer's own harness around a candidate)."""
    return not (library_path(path) or "-packages/" in path or re.search(r"/python3\.\d+/", path)
                or path.startswith("<") or TOOL_FRAME.search(path))


def masked(message: str) -> str:
    """A message with what changes between runs and while reducing masked: arrays, numbers, paths."""
    text = message
    while _ARRAY.search(text):
        text = _ARRAY.sub("<array>", text)
    text = re.sub(r"\[.*$", "<array>", text)  # an array printed over several lines
    text = re.sub(r"Array\(<array>[^)]*\)|Array\([^)]*\)", "<array>", text)
    return normalize_message(text)


def reads(check_line: str, message: str) -> str:
    """What a check reads, from its line and its message."""
    line = check_line.split(",", 1)[0] if check_line.startswith("assert ") else check_line
    if _NONFINITE.search(check_line) or _NONFINITE.search(message):
        return "nonfinite"
    if _CLOSE.search(check_line) or _CLOSE.search(message):
        return "close"
    if check_line.startswith("assert ") and _ORDER.search(line):
        return "order"
    return "value"


class OwnCheck(Oracle):
    name = "own-check"
    #: a non-finite value's public call that reached it, and the check that noticed it
    loose = ("from", "check")

    def owner(self, sig: Signature) -> str:
        """The program's: a NaN made where an operation's value or derivative is not finite, or a check
        no library raised, is most often the code's own (a comparison's fix may say otherwise:
        `reducer.counterfactual.OWNERS`); JAX's where the value is made inside a public call from
        inputs its documentation does not rule out and no fix of the program's takes it away
        (`oracles.nonfinite.inside_call`)."""
        return "jax" if nonfinite(sig) and inside_call(sig) and not sig.get("contract") else "program"

    def why_own(self, sig: Signature) -> str:
        by = {"error_if": "Equinox raised it only for the program's own `eqx.error_if`",
              "checkify": "JAX's `checkify` raised it only for a check the program asked it for"}
        return by.get(sig.get("check"), super().why_own(sig))

    def same(self, wanted: Signature, seen: Signature) -> bool:
        """A non-finite value is the same failure when it is made in the same place (`value`, `in`,
        `op`, `fix`, `cause`), whichever public function of the program reached it (`from`) and
        whichever check noticed it (`check`: the program's `assert_allclose` against a reference,
        or the `isfinite` check a written-back traced program carries)."""
        if wanted.family == seen.family == "nonfinite":
            return self._identity(wanted) == self._identity(seen)
        return wanted == seen

    def _identity(self, sig: Signature) -> tuple:
        return tuple((k, v) for k, v in sig.fields if k not in self.loose)

    def classify(self, run: RunResult) -> Signature | None:
        if run.returncode in (0, None) or run.returncode < 0 or run.timed_out:
            return None
        made = library_check(run.output)
        if made:
            return self._signature(run, made.kind, made.check, made.line, made.message, made.raised,
                                   made.on_nonfinite)
        found = _traceback(run.output)
        if found is None:
            return self._exit(run)
        frames, ending = found
        if not ending:
            return None
        m = _EXCEPTION.match(ending[0])
        if not m:
            return None
        kind = m.group("type").split(".")[-1]
        body = [m.group("msg") or ""] + ending[1:]
        message = next((line.strip() for line in body if line.strip()), "")
        innermost, own = frames[-1], [f for f in frames if f.own]
        if not own:
            return None
        line = own[-1].source
        if innermost.own:
            if line.startswith("assert ") and kind == "AssertionError":
                check = "assert"
            elif line == "raise" or line.startswith("raise ") and kind in line:  # not an error made raising it
                check = "raise"
            else:
                return None  # an error of the program's code, not a check it made
        elif kind == "AssertionError" and (_TESTING.search(innermost.file) or _HELPER.search(line)):
            helper = _HELPER.search(line)
            check = helper.group(1) if helper else innermost.func
        elif kind == _PYTEST_FAILED and "/_pytest/" in innermost.file:
            check = "pytest.raises" if "raises(" in line else "pytest.fail"
        else:
            return None  # raised inside a library: another family's, or none
        return self._signature(run, kind, check, line, message, ending[0])

    def _signature(self, run: RunResult, kind: str, check: str, line: str, message: str, raised: str,
                   on_nonfinite: bool = False) -> Signature:
        """The check `check` on the program's `line` raising `kind` with `message` (its exception's line
        `raised`); once the origin of the non-finite value it reads is located, where that value was made."""
        reading = "nonfinite" if on_nonfinite else reads(line, message)
        fault = run.harness.get("fault")
        shown = _excerpt(run.output, raised)
        # where the value was made (`reducer.faults.origin`); a comparison too, failing on a NaN or an Inf of one side
        if reading in ("nonfinite", "close") and fault:
            return nonfinite_signature(kind, check, tuple(tuple(f) for f in fault["fields"]), shown)
        fields = (("type", kind), ("check", check), ("reads", reading), ("message", masked(message)))
        title = f"The program's own check fails: `{kind}` from `{check}` {READS[reading]}"
        return Signature(self.name, fields, title, shown)

    def _exit(self, run: RunResult) -> Signature | None:
        """An exit with a message and no traceback: `raise SystemExit("…")`, `print(…); sys.exit(1)`;
        once the origin of a non-finite value it reports is located, where that value was made."""
        lines = [line.strip() for line in run.output.splitlines() if line.strip()]
        if not lines or run.returncode == 2 and "usage:" in run.output:  # argparse wants arguments
            return None
        message, fault = lines[-1], run.harness.get("fault")
        if reads("", message) == "nonfinite" and fault:
            return nonfinite_signature("SystemExit", "exit", tuple(tuple(f) for f in fault["fields"]),
                                       "\n".join(lines[-6:]))
        fields = (("type", "SystemExit"), ("check", "exit"), ("status", str(run.returncode)),
                  ("reads", reads("", message)), ("message", masked(message)))
        return Signature(self.name, fields, f"The program exits with status {run.returncode}: {message[:80]}",
                         "\n".join(lines[-6:]))


#: the references a program's own check can be held to (`reducer.counterfactual`), in the order they
#: are tried, each with what the program must call for it: JAX's NaN check kept as it documents
#: (`reducer.faults.nan_check`; first: a program that counts on it fails op by op too), Enzyme-JAX's
#: derivative replaced by JAX's AD, `jit` by op-by-op evaluation, JAX's NumPy and SciPy functions by
#: NumPy's and SciPy's, where the program imports them (`reducer.faults.numpy_twins`)
REFERENCES = (("nan-check", r"jax_debug_(?:nans|infs)|debug_(?:nans|infs)\(\s*True|JAX_DEBUG_(?:NANS|INFS)"),
              ("enzyme", r"enzyme_jax_ir"), ("jit", r"jit"),
              ("numpy", r"(?m)^\s*(?:import\s+(?:.*,\s*)?|from\s+)(?:numpy|scipy)\b"))
#: of those, the one a check on a NaN or an Inf may be held to: a NaN JAX was asked to stop and did not
ON_NONFINITE = ("nan-check",)
#: of those, the one only a comparison of two values, or a check on a located NaN or Inf, is held to:
#: JAX's function against NumPy's (a loss that must fall compares no two functions)
ON_COMPARISONS = ("numpy",)


def can_be_given(how: str, program: str) -> bool:
    """Whether `program` can be given the reference of `how` (`REFERENCES`): it calls what it replaces."""
    return any(name == how and re.search(needs, program) for name, needs in REFERENCES)


def references(sig: Signature, program: str) -> list[str]:
    """The references worth trying for a failure the program's own check decides (an `assert`
    comparing Enzyme-JAX's gradient with JAX's, or `jit` with op by op): each one the program can be
    given, in turn (JAX's functions computed by NumPy's only for a comparison, or a located NaN or Inf);
    for an `assert`, a `raise` or an exit on a NaN or an Inf whose origin has a fix of the program's, none
    (that fix is the one: `oracles.nonfinite`), on a NaN or an Inf read alone only JAX's NaN check, where
    the program turns it on; none for another family."""
    if not decided_by_program(sig) or nonfinite(sig) and sig.get("check") in ("assert", "raise", "exit") \
            and programs_fix(sig):
        return []
    compares = nonfinite(sig) or sig.get("reads") == "close"
    tried = [how for how, _ in REFERENCES if can_be_given(how, program) and (compares or how not in ON_COMPARISONS)]
    return [how for how in tried if how in ON_NONFINITE] if sig.get("reads") == "nonfinite" else tried


def reads_a_trend(sig: Signature) -> bool:
    """Whether the program's own check reads an ordering or a value (a loss that must fall): one a
    library's own fix may hold (an optimizer's rates as it documents them)."""
    return decided_by_program(sig) and sig.get("reads") in ("order", "value")


def failed_check(run: RunResult, wanted: Signature) -> str:
    """The kind of check `run` failed (a written-back program's `assert` where the original compared
    with `assert_allclose`), else the one `wanted` names."""
    seen = OwnCheck().classify(run)
    return (seen.get("check") if seen is not None else None) or wanted.get("check") or ""


def _excerpt(text: str, exception_line: str) -> str:
    lines = text.splitlines()
    at = max((i for i, line in enumerate(lines) if line == exception_line), default=len(lines) - 1)
    return "\n".join(lines[max(0, at - 4): at + 6])
