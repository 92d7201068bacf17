"""Where a NaN or an Inf is made: the operation at fault behind a check that fails on a non-finite
value (`assert jnp.isfinite(grads).all()`), in the forward computation or in its derivative.

The program runs twice more with JAX's own checks on (`jax_debug_nans`, and `jax_debug_infs` too),
which raise `FloatingPointError: invalid value (nan) encountered in mul` at the first primitive whose
result is not finite, with the program's frame that called it and, below it, the library frames
down to the `lax` call (JAX runs a `jit` function again op by op to find it, and the backward pass of
a gradient too). From the traceback:

- `op`: the operation whose value or derivative is not finite: the `lax` function the innermost
  library frame calls (`sqrt` for `jnp.linalg.norm`); where that only spreads a value (a `mul`
  in `p * jnp.log(p)`, `SPREADING`), the function of the program's line whose derivative is infinite
  somewhere (`log`); else the primitive itself;
- `in`: `forward` when that primitive made it (`log` of 0, or a primitive of the `lax` function's own
  making: `ndtri`'s `sub`), else the mode of the derivative that did, where JAX's AD frames stand
  between (`grad` for reverse mode, `jvp` for forward mode, from the innermost transformation the
  program's own frames call: the `div` of `sqrt`'s derivative rule gives inf at 0);
- `from`: the public function the program called at its innermost frame (`norm`).

An Inf comes before the NaN it often turns into (`inf × 0`); the run that also stops at infs names
that root when it stops inside the call of the program the NaN run stops in, or when the NaN only
spread what an operation made (inf - inf in a `mean`: the `arctanh(1.0)` before it); the NaN run is
kept otherwise (an Inf the program meant, such as a `-inf` mask, is no fault). Either run alone answers
when the other finds nothing.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Callable

from oracles import kinds
from oracles.own_check import own_frames
from oracles.outcome import RunResult, Signature
from reducer.faults import CutShort, Fault
from reducer.faults.jax_checks import PASSED_ON

FLOATING = re.compile(r"^(?:\S*JaxStackTraceBeforeTransformation: )?FloatingPointError: invalid value "
                      r"\((?P<kind>nan|inf)\) encountered in (?P<prim>\w+)", re.M)
#: a public `lax` function called (not a private helper: `lax._convert_element_type` in `jnp.asarray`)
LAX_CALL = re.compile(r"\blax\.(?P<name>[a-z]\w*)\(")
#: a `lax` function by the primitive it binds, where their names differ: the name a written-back
#: script's `lax.select_n` and the program's `jnp.where` (`lax.select`) share
PRIMITIVE_OF = {"select": "select_n"}
#: a primitive bound by the `lax` function itself (`sqrt_p.bind(x)`): what a frame shows of a `lax`
#: function the program handed to a transformation (`f = lax.sqrt; jax.grad(f)(a)`)
BIND = re.compile(r"\b(?P<name>[a-z]\w*)_p\.bind\(")
CALL = re.compile(r"(?P<callee>[A-Za-z_][\w.]*)\s*\(")
#: the function a transformation is given: `norm` in `jax.grad(jnp.linalg.norm)`
GIVEN = re.compile(r"\b(?:value_and_grad|grad|vjp|jvp|jacrev|jacfwd|hessian|vmap|jit)\(\s*([A-Za-z_][\w.]*)\s*[,)]")
#: a transformation that takes a derivative, as JAX names it or a library wraps it (`eqx.filter_grad`)
TRANSFORMS = re.compile(r"(?<![A-Za-z0-9])(value_and_grad|grad|vjp|jvp|jacrev|jacfwd|hessian|linearize)\b")
#: JAX's automatic differentiation, in a frame between the program's call and the operation at fault:
#: the operation ran inside a derivative's rule (a `lax` function built of others makes a value itself)
AD_FRAME = re.compile(r"jax/_src/interpreters/ad\.py$")
#: what JAX prints where it filtered its own frames out of a traceback (`JAX_TRACEBACK_FILTERING`)
FILTERED = "JAX has removed its internal frames"
#: a derivative's mode, by the transformation that takes it: reverse (`grad`) or forward (`jvp`)
MODES = {"value_and_grad": "grad", "grad": "grad", "vjp": "grad", "jacrev": "grad", "hessian": "grad",
         "jvp": "jvp", "jacfwd": "jvp", "linearize": "jvp"}
#: a value inside the domain of a function whose derivative is infinite somewhere, for the remedy's
#: inner `where` (1.0, the default, is the singular point of these)
SAFE = {"acos": 0.0, "asin": 0.0, "arccos": 0.0, "arcsin": 0.0, "atanh": 0.0, "arctanh": 0.0}
#: operations that pass a non-finite value on (inf × 0, a sum with nan …) rather than make one
SPREADING = {"mul", "add", "sub", "neg", "select_n", "dot_general", "broadcast_in_dim", "reduce_sum", "add_any",
             "convert_element_type", "reshape", "transpose", "concatenate", "pad", "copy"}
#: functions whose derivative is infinite somewhere in their domain
SINGULAR = {"log", "log2", "log10", "sqrt", "rsqrt", "cbrt", "norm", "power", "pow", "divide", "true_divide",
            "reciprocal", "arcsin", "arccos", "arctanh", "xlogy", "entr", "logit"}


def singular_calls(source: str) -> list[str]:
    """The functions whose derivative is infinite somewhere (`SINGULAR`) that `source` calls or hands
    to a transformation, by their last name (`arccos` for `jnp.arccos(x)`), once each, in the order
    they appear; NumPy's and `math`'s left out."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if name in SINGULAR and not (isinstance(root, ast.Name) and root.id in ("np", "numpy", "math", "onp")):
            found.append((node.lineno, node.col_offset, name))
    return list(dict.fromkeys(name for *_, name in sorted(found)))


def with_checks(source: str, infs: bool, eager: bool = False) -> str:
    """`source` with JAX's NaN (and Inf) checks switched on before its first statement (after its
    docstring and `__future__` imports), its other lines where they were; with `eager`, `jit` off too,
    so that every operation's result is checked as it is made. An operation that only moves a value
    already NaN or Inf is not taken for its maker (`jax_checks`)."""
    return first_of(source, "from reducer.faults.jax_checks import switch_on as _reducer_checks; "
                    f"_reducer_checks(infs={infs}, eager={eager})")


def first_of(source: str, statements: str) -> str:
    """`source` with one line of `statements` run before its first statement (after its docstring and
    `__future__` imports), on that statement's line: every other line stays where it was, so that a
    traceback's line numbers still name the program's lines."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError):
        return source
    first = next((s for s in body if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")
                  and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))), None)
    if first is None:
        return source + "\n" + statements + "\n"
    lines = source.splitlines(keepends=True)
    at = first.lineno - 1
    indent = re.match(r"\s*", lines[at]).group(0)
    lines[at] = f"{indent}{statements}; {lines[at][len(indent):]}"
    return "".join(lines)


def _code(line: str) -> str:
    """A line of the program without its comment: `# uniform, log-density -log(2 pi)` calls nothing."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):  # a line of a statement that goes on: its tokens so far
        pass
    return line


def _singular(line: str) -> str:
    """The first function a line calls whose derivative is infinite somewhere in its domain, for a
    value JAX's checks met only where it spread (`p * jnp.log(p)` stopped at `mul`: `log`)."""
    return next((n for m in CALL.finditer(_code(line)) for n in [m.group("callee").split(".")[-1]]
                 if n in SINGULAR), "")


ASSIGNED = re.compile(r"^(?P<indent>\s*)(?P<name>[A-Za-z_]\w*)\s*=(?!=)")
NAME = re.compile(r"\b[A-Za-z_]\w*\b")
MAX_LOOK_BACK = 60


def _made_by(source: str, at: int, line: str) -> str:
    """For a line that only spread a non-finite value (`d = b * c`), the first function with an
    infinite derivative somewhere that made one of its operands on an earlier line of the same
    function (`c = jnp.log(b)`); "" when none does or `source` is not the program the line is in."""
    lines = source.splitlines()
    if not 0 < at <= len(lines) or _code(lines[at - 1]).strip() != _code(line).strip():
        return ""
    wanted = set(NAME.findall(line.split("=", 1)[-1]))
    depth = len(lines[at - 1]) - len(lines[at - 1].lstrip())
    for earlier in reversed(lines[max(0, at - 1 - MAX_LOOK_BACK):at - 1]):
        if earlier.strip() and len(earlier) - len(earlier.lstrip()) < depth:
            break  # the function (or block) the line is in starts here
        m = ASSIGNED.match(earlier)
        if m and m.group("name") in wanted and _singular(earlier):
            return _singular(earlier)
    return ""


#: a true division written as the operator
DIVISION = re.compile(r"(?<![/*])/(?![/=])")


def _callee(line: str, op: str, entered: tuple[str, ...] = ()) -> str:
    """The public function of a line of the program that made the value: `op` itself when the line
    calls it (`jnp.log` in `jnp.sum(jnp.log(p))`) or gives it to a transformation, else the first the
    traceback shows it `entered` (`isf` in `assert_allclose(norm.isf(q), …)`; `poch` in
    `jnp.log(poch(r, y))`, whose `exp` overflowed before `log` ran; `logpdf` in `t.logpdf(r / s, df)`,
    whose own `div` made it), else a division the line writes (`/`), else the first with an infinite
    derivative somewhere (`norm` in `jax.grad(jnp.linalg.norm)(x)`), else the first it calls."""
    line = _code(line)
    names = [m.group("callee").split(".")[-1] for m in CALL.finditer(line)]
    names += [m.group(1).split(".")[-1] for m in GIVEN.finditer(line)]
    names = [n for n in names if n not in ("jit", "vmap", "lambda") and not TRANSFORMS.fullmatch(n)]
    into = next((n for n in entered if n in names), None)
    if op in names or not into and op == "div" and DIVISION.search(line):
        return op  # `z / jnp.linalg.norm(z)`: the division, not the call it reads, unless made inside that call
    return into or next((n for n in names if n in SINGULAR), names[0] if names else "")


def read(output: str, source: str = "") -> dict | None:
    """What a run with JAX's checks on says: the kind of value, the primitive that made it, the
    operation, where in the program (file:line of its innermost frame, and of every frame of the
    program's own around it) and through which call; whether the primitive's inputs already held
    the value (`passed_on`: JAX's checks missed where it was made). `source`, the program's text,
    lets a value that only spread on its line be traced to the line that made it (`_made_by`)."""
    found = list(FLOATING.finditer(output))
    if not found:
        return None
    last = found[0]  # under a transformation, the first names the operation as the program called it
    frames = own_frames(output[:last.start()])
    if not frames:
        return None
    ours = [k for k, f in enumerate(frames) if f.own]
    if not ours:
        return None
    inner = ours[-1]
    below = [f for f in frames[inner + 1:] if not f.own]
    prim = last.group("prim")
    # a library function of the primitive's name, not `lax`'s own, made it (`special.ndtri` for `ndtri`),
    # else the `lax` function the innermost library frame calls
    lax = prim if any(f.func.lstrip("_") == prim and "/jax/_src/lax/" not in f.file for f in below) else \
        next((m.group("name") for f in reversed(below) for m in [LAX_CALL.search(f.source)] if m), "")
    line = _code(frames[inner].source)
    if not lax and LAX_CALL.search(line):  # the program calls `lax` itself
        lax = LAX_CALL.search(line).group("name")
    if not lax:  # the outermost primitive bound below: the `lax` function the transformation was given
        lax = next((m.group("name") for f in below for m in [BIND.search(f.source)] if m), "")
    op = lax if lax and lax not in SPREADING else (_singular(line) or _made_by(source, frames[inner].line, line)
                                                  or lax or prim)
    op = PRIMITIVE_OF.get(op, op)
    differentiated = "backward pass" in output or bool(lax) and lax != prim and prim not in SPREADING \
        and _through_ad(output, below, source)
    named = [m.group(1) for f in frames if f.own for m in [TRANSFORMS.search(_code(f.source))] if m]
    transform = MODES.get(named[-1] if named else "grad", "grad")  # the innermost, in the program's own frames
    passed_on = PASSED_ON.format(prim=prim, kind=last.group("kind")) in output[:last.start()]
    return {"kind": last.group("kind"), "prim": prim, "op": op, "in": transform if differentiated else "forward",
            "passed_on": passed_on,
            "from": _callee(line, op, tuple(f.func for f in below)) or op,
            "at": f"{frames[inner].file}:{frames[inner].line}",
            "within": [f"{frames[k].file}:{frames[k].line}" for k in ours]}


def met(found: dict | None) -> bool:
    """Whether a run's checks met the value where it was made (`read`): not nowhere, nor only where
    a primitive was passed it (a compiled call let it through: op by op is where to look)."""
    return found is not None and not found["passed_on"]


def _through_ad(output: str, below: list, source: str) -> bool:
    """Whether JAX's AD frames stand between the program's call and the operation that made the value;
    where JAX filtered its frames out of the traceback, whether the program takes a derivative at all."""
    if FILTERED in output:
        return not source or bool(TRANSFORMS.search(source))
    return any(AD_FRAME.search(f.file) for f in below)


def evidence(found: dict) -> str:
    """Why, in sentences a user understands, and the usual remedy; `found` has `op`, `from` and
    `in`, and where a run said them, the `kind` of value and the primitive (`prim`) that made it."""
    op, via, kind = found["op"], found["from"], found.get("kind")
    call = f"`{op}`" + (f" (through `{via}`)" if via != op else "")
    if found["in"] == "forward":
        made = {"inf": "an inf", "nan": "a nan"}.get(kind, "a non-finite value")
        return (f"{call} makes {made} from finite inputs in the forward computation, and it reaches the value the "
                f"program checks. The usual remedy: keep the input of `{via}` inside its domain (`jnp.clip`, or a "
                f"`jnp.where` that puts a safe value where the input is out of range) before calling it.")
    rule = f": its derivative rule's `{found['prim']}` gives {kind}" if found.get("prim") and kind else ""
    nan = (" Where that derivative is multiplied by 0 (a `where` that masks the value out, or a zero cotangent), "
           "inf × 0 gives nan." if kind != "nan" or found.get("prim") in ("mul", "dot_general") else "")
    return (f"The derivative of {call} is not finite at the value it gets here{rule} under `{found['in']}`.{nan} "
            f"The usual remedy is the inner `where`: make the input of `{via}` safe where its result is not used "
            f"(for example `x = jnp.where(mask, x, {SAFE.get(op, SAFE.get(via, 1.0))})` before `{via}(x)`, then "
            f"`jnp.where(mask, {via}(x), 0.0)`), "
            f"so that neither branch has a non-finite derivative.")


def located(output: Callable[[bool], str], source: str = "") -> dict | None:
    """Where the NaN or Inf is made, from a program's output with JAX's NaN checks on (`output(False)`)
    and with its Inf checks too (`output(True)`); `source` is the program's text."""
    both = read(output(True), source)
    if both is not None and both["kind"] == "nan":
        return both  # a NaN before any Inf: the run with only the NaN checks stops at the same place
    nans = read(output(False), source)
    if both and nans and nans["at"] not in both["within"] and not _spread_from(nans, both):
        return nans  # an Inf the program meant, outside the call that made the NaN: the NaN is the fault
    return both or nans


def _spread_from(nans: dict, infs: dict) -> bool:
    """Whether the NaN only spread an Inf that an operation made from finite values: a sum of inf and
    -inf (`mean` of a loss with `arctanh(1.0)` in it) goes back to the `atanh`. An Inf first met where
    it only spreads (the `-inf` of a mask, converted or selected) is one the program meant."""
    return (nans["prim"] in SPREADING and nans["op"] not in SINGULAR
            and infs["prim"] not in SPREADING and infs["in"] == "forward")


#: NumPy's word for a comparison whose two sides hold NaN or Inf in different places
MISMATCHED = re.compile(r"\b(?:nan|inf) location mismatch", re.I)


def applies(sig: Signature, run: RunResult | None = None) -> bool:
    """Whether a failure is a check on a non-finite value, whose operation at fault can be located:
    a check that reads one, or a comparison (`assert_allclose`) that `run` shows failing on a NaN or
    an Inf on one side only; or JAX's own NaN check that the program switched on."""
    if kinds.on_nonfinite(sig) or kinds.jax_value_check(sig):
        return True
    return (kinds.reads(sig) == "close" and run is not None
            and bool(MISMATCHED.search(run.output)))


class NonFiniteValues:
    """The localiser for non-finite values; `run(source)` runs a program as candidates run."""

    fields = ("in", "op", "from")

    def __init__(self, run: Callable[[str], RunResult]):
        self.run = run

    def _find(self, program: str) -> dict | None:
        def output(infs: bool) -> str:
            checked = self.run(with_checks(program, infs=infs))
            if checked.timed_out:
                raise CutShort(f"the run under JAX's {'Inf' if infs else 'NaN'} checks timed out")
            return checked.output

        return located(output, program)

    def locate(self, program: str, run: RunResult, signature: Signature) -> Fault | None:
        found = self._find(program)
        if found is None:
            return None
        fields = tuple((k, found[k]) for k in self.fields)
        return Fault(found["op"], fields, evidence(found))
