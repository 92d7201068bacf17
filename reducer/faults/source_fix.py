"""The fix of a non-finite value's origin written into the reproducer as a user would write it: the
inner `where` JAX's FAQ describes, around the call at the origin, so that a report can show it as a
diff the user can apply (`rewrites`).

`jnp.sqrt(x)` becomes `jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)`: the operation is
evaluated at a safe point where its value or its derivative is not finite, and its value there is
the one it has at the edge of its domain where that is finite (`sqrt(0)` is 0), so neither the value
nor the gradient the program reads is NaN or infinite. `jnp.arctan2(y, x)` at the origin, where both
are 0, becomes `jnp.where((y != 0) | (x != 0), jnp.arctan2(jnp.where(…, y, 0.0), jnp.where(…, x, 1.0)), 0.0)`;
a division `z / n`, `jnp.where(n != 0, z / jnp.where(n != 0, n, 1.0), 0.0)`; a fractional power
`x ** 0.3` (`jnp.power(x, 0.3)`), `jnp.where(x > 0, jnp.where(x > 0, x, 1.0) ** 0.3, 0.0)`.
The calls rewritten are those a program
spells: the operation's own (`jnp.log`, `jax.lax.sqrt`) or the user's call the origin was reached
through (`jnp.linalg.norm`); one passed by name (`jax.grad(jnp.linalg.norm)`) becomes a lambda that
calls it so. Each rewrite is only a proposal: the job runs it, and a report shows
only one that runs through.
"""
from __future__ import annotations

import ast
import difflib

from reducer.faults.safe_ops import ALIASES, primitives

#: where the operation's value and derivative are finite, for its argument `{x}` (`{y}`, `{x}`: `arctan2(y, x)`,
#: `y / x`, `y ** x`)
DOMAIN = {"sqrt": "{x} > 0", "rsqrt": "{x} > 0", "log": "{x} > 0", "log1p": "{x} > -1", "acos": "abs({x}) < 1",
          "asin": "abs({x}) < 1", "atanh": "abs({x}) < 1", "acosh": "{x} > 1", "norm": "{where_any}({x} != 0)",
          "atan2": "({y} != 0) | ({x} != 0)", "div": "{x} != 0", "pow": "{y} > 0"}
#: how many arguments the operation takes (1 when not listed)
ARITY = {"atan2": 2, "div": 2, "pow": 2}
#: a point inside the domain (1.0 when not listed), for each argument; None: the argument is left as it is
SAFE = {"acos": ("0.0",), "asin": ("0.0",), "atanh": ("0.0",), "acosh": ("2.0",), "atan2": ("0.0", "1.0"),
        "div": (None, "1.0"), "pow": ("1.0", None)}
#: the value at the edge of the domain, where it is finite: the rewritten call gives it there
EDGE = {"sqrt": "0.0", "norm": "0.0", "atan2": "0.0", "div": "0.0", "pow": "0.0"}
#: the operators a rewrite may meet as a binary operation, by the rewrite's kind
OPERATORS = {"div": (ast.Div, "/"), "pow": (ast.Pow, "**")}


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _numpy(func: str, program: str) -> str:
    """The `jax.numpy` a program spells beside `func` (`jnp`, `jax.numpy`)."""
    if func.startswith("jax.numpy."):
        return "jax.numpy"
    return "jnp" if func.startswith("jnp.") or "import jax.numpy as jnp" in program else "jax.numpy"


def _kind(name: str, op: str, via: str) -> str | None:
    """Which rewrite a call of `name` gets at an origin in `op` reached through `via`; None if none."""
    last = name.rsplit(".", 1)[-1]
    if last == "norm":
        return "norm" if op == "sqrt" or "norm" in (op, via) else None
    for kind in (last, *primitives(last)):
        if kind in DOMAIN and kind != "norm" and kind in (op, *primitives(op)):
            return kind
    return None


def rewritten(program: str, call: ast.Call | ast.BinOp, kind: str, masked: bool = False) -> str:
    """`program` with `call` (of its operation's arguments, or an operator's: `y / x`, `y ** x`) evaluated inside
    its domain (see the module's docstring); `masked` when a `where` of the program already chooses
    its value outside the domain."""
    operands = [call.left, call.right] if isinstance(call, ast.BinOp) else call.args
    func = "" if isinstance(call, ast.BinOp) else dotted(call.func) or ""
    np_ = _numpy(func, program)
    raw = [ast.get_source_segment(program, arg) for arg in operands]
    bare = (ast.Name, ast.Subscript, ast.Attribute, ast.Call, ast.Constant)  # no parentheses needed before `>`
    args = [a if isinstance(arg, bare) else f"({a})" for a, arg in zip(raw, operands)]
    named = dict(zip(("x",) if len(args) == 1 else ("y", "x"), args))
    ok = DOMAIN[kind].format(**named, where_any=f"{np_}.any")
    safe = SAFE.get(kind, ("1.0",) * len(args))
    moved = [a if point is None else f"{np_}.where({ok}, {r}, {point})" for a, r, point in zip(args, raw, safe)]
    inner = f" {OPERATORS[kind][1]} ".join(moved) if isinstance(call, ast.BinOp) else \
        f"{ast.get_source_segment(program, call.func)}({', '.join(moved)})"
    text = f"{np_}.where({ok}, {inner}, {EDGE[kind]})" if kind in EDGE and not masked else inner
    return replaced(program, call, text)


def passed(program: str, node: ast.expr, kind: str) -> str:
    """`program` with a function passed by name (`jax.grad(jnp.arctan2)`) as a lambda that calls it
    inside its domain (`rewritten`)."""
    params = "y, x" if ARITY.get(kind, 1) == 2 else "x"
    call = f"{ast.get_source_segment(program, node)}({params})"
    inner = rewritten(call, ast.parse(call, mode="eval").body, kind)
    return replaced(program, node, f"(lambda {params}: {inner})")


def replaced(program: str, node: ast.AST, text: str) -> str:
    """`program` with the source of `node` replaced by `text`."""
    lines = program.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:node.lineno - 1]) + _byte_col(lines[node.lineno - 1], node.col_offset)
    end = sum(len(line) for line in lines[:node.end_lineno - 1]) + _byte_col(lines[node.end_lineno - 1],
                                                                            node.end_col_offset)
    return program[:start] + text + program[end:]


def _byte_col(line: str, offset: int) -> int:
    """A character column from `ast`'s UTF-8 byte offset."""
    return len(line.encode("utf-8")[:offset].decode("utf-8", "replace"))


def _whole_power(kind: str, exponent: ast.expr) -> bool:
    """Whether a power's exponent is a whole number of at least 1 (`x ** 2`): finite, with its
    derivative, everywhere, so not the origin's."""
    value = exponent.value if isinstance(exponent, ast.Constant) else None
    return kind == "pow" and isinstance(value, (int, float)) and value >= 1 and float(value).is_integer()


def rewrites(program: str, op: str, via: str = "") -> list[str]:
    """The program with the inner `where` around one call at the origin, for each such call (or
    function passed by name, `jax.grad(jnp.linalg.norm)`), the user's own call first."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return []
    found, masked, called = [], set(), set()
    for node in ast.walk(tree):
        name = dotted(node.func) if isinstance(node, ast.Call) else None
        if name and name.rsplit(".", 1)[-1] == "where" and len(node.args) == 3:  # its chosen branch is masked
            masked.update(id(n) for n in ast.walk(node.args[1]))
        if isinstance(node, (ast.Call, ast.Attribute)):  # what is called, or an attribute taken of: not passed
            called.add(id(node.func if isinstance(node, ast.Call) else node.value))
        kind = _kind(name, op, via) if name and not node.keywords else None
        if kind and len(node.args) == ARITY.get(kind, 1) and not _whole_power(kind, node.args[-1]):
            found.append((name.rsplit(".", 1)[-1] != via, node.lineno, node.col_offset, node, kind, rewritten))
        for kind, (operator, _) in OPERATORS.items():
            if (isinstance(node, ast.BinOp) and isinstance(node.op, operator) and kind in (op, *primitives(op))
                    and not _whole_power(kind, node.right)):
                found.append((not (via == kind or kind in primitives(via)), node.lineno, node.col_offset, node, kind,
                              rewritten))
    for node in ast.walk(tree):
        name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in called else None
        if name and "." in name and _kind(name, op, via):
            found.append((name.rsplit(".", 1)[-1] != via, node.lineno, node.col_offset, node, _kind(name, op, via),
                          passed))
    return [how(program, node, kind, id(node) in masked) if how is rewritten else how(program, node, kind)
            for *_, node, kind, how in sorted(found, key=lambda f: f[:3])]


def as_diff(before: str, after: str, name: str = "repro.py") -> str:
    """A unified diff the user can apply with `patch -p0` or by hand."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"{name}", f"{name}", n=1)).rstrip("\n")


def in_float64(program: str, op: str = "") -> str | None:
    """The fix of an overflow at the origin (`reducer.faults.float64_fix`): the program made float64
    after its imports, as JAX's documentation spells it, and with `op`, each call the program spells of
    it given its argument in float64 (a Flax layer's output stays float32); None when it has no import
    of JAX to follow, or no call of `op` to widen."""
    if op:
        try:
            tree = ast.parse(program)
        except SyntaxError:
            return None
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and len(node.args) == 1
                 and (dotted(node.func) or "").rsplit(".", 1)[-1] in (op, *[k for k, v in ALIASES.items() if op in v])]
        for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset), reverse=True):
            arg = ast.get_source_segment(program, call.args[0])
            program = replaced(program, call.args[0], f"{_numpy(dotted(call.func) or '', program)}.asarray({arg}, "
                                                      f"{_numpy(dotted(call.func) or '', program)}.float64)")
        if not calls:
            return None
    return after_imports(program, ['jax.config.update("jax_enable_x64", True)'])


def after_imports(program: str, added: list[str]) -> str | None:
    """`program` with `jax` imported where it is not, and the lines `added` after, both after its
    last import; None when it does not parse or imports nothing of JAX."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    modules = [alias.name for node in imports if isinstance(node, ast.Import) for alias in node.names] + \
        [node.module or "" for node in imports if isinstance(node, ast.ImportFrom)]
    if not any(name.split(".")[0] == "jax" for name in modules):
        return None
    binds_jax = any(alias.name == "jax" and alias.asname is None for node in imports if isinstance(node, ast.Import)
                    for alias in node.names)
    added = ([] if binds_jax else ["import jax"]) + added
    lines = program.splitlines(keepends=True)
    at = max(node.end_lineno for node in imports)
    return "".join(lines[:at]) + "".join(f"{line}\n" for line in added) + "".join(lines[at:])
