"""The fix of an overflow that float64 cannot hold either, or of an underflow of every term a formula
adds: the hand-written formula at the origin computed the way JAX's own function computes it.

A hand-written log-sum-exp `jnp.log(jnp.sum(jnp.exp(z)))` over logits in the thousands is `inf` in
float32 and in float64 alike (`exp` overflows float64 beyond 709), so neither the inner `where`
(`reducer.faults.safe_ops`) nor float64 (`reducer.faults.float64_fix`) takes the value away, while the
reference the program checks it against (`scipy.special.logsumexp`) is finite: it subtracts the
maximum first, as `jax.nn.logsumexp` does. The same formula over log-densities in the thousands below
zero is `log(0) = -inf`: every `exp` underflowed (the origin `op=log cause=exp-underflow`), and the
inner `where` would make it finite only with a wrong value. The fix is that function in place of
the formula (`FORMULAS`), written where the program writes the formula:

- `log(1 + exp(x))`, `log(exp(x) + 1)`, `log1p(exp(x))`: `jax.nn.softplus(x)`;
- `log(exp(a) + exp(b))`: `jax.numpy.logaddexp(a, b)`;
- `log(sum(exp(x), axis))`, `log(exp(x).sum(axis))`: `jax.nn.logsumexp(x, axis)`;
- `exp(x) / sum(exp(x), axis, keepdims=True)`, `exp(x) / sum(exp(x))`: `jax.nn.softmax(x, axis)`
  (`inf / inf` is its NaN);
- `log(1 - sigmoid(z))`, `log1p(-sigmoid(z))`, `log(sigmoid(z))`: `jax.nn.log_sigmoid(-z)` (`z`): a
  sigmoid is exactly 1 (or 0) in float32 beyond 17, in float64 beyond 37, so that `log` meets its pole
  with no float wide enough to keep it off;
- `log(softmax(x, axis))`: `jax.nn.log_softmax(x, axis)`, for the same reason.

The operands are followed through the names a scope binds once (`e = jnp.exp(s)`, then
`e / e.sum(-1, keepdims=True)`), as users and the traced level's written-back scripts spell one
operation a line. A candidate is held to the original's formula (its `fix`): it must run through with
that formula rewritten, so an `exp(19909.0)` checked alone, with no `log` of it, has nothing to
rewrite and is rejected without a run, and a `log(1 + exp(x))` cannot stand for a log-sum-exp.
"""
from __future__ import annotations

import ast

from reducer.faults import source_fix

#: the signature's `fix` of a sigmoid's `log` (`reducer.faults.saturated` follows it as the program runs)
LOG_SIGMOID = "log_sigmoid"
#: each formula's stable call, by the signature's `fix` that names it
FORMULAS = {"softplus": "jax.nn.softplus({x})", "logaddexp": "jax.numpy.logaddexp({a}, {b})",
            "logsumexp": "jax.nn.logsumexp({x}{axis})", "softmax": "jax.nn.softmax({x}{axis})",
            LOG_SIGMOID: "jax.nn.log_sigmoid({x})", "log_softmax": "jax.nn.log_softmax({x}{axis})"}
#: the formulas of a function that rounds to 0 or 1 in any float, by the function
SATURATING = {LOG_SIGMOID: "sigmoid", "log_softmax": "softmax"}
#: the operation whose overflow each formula keeps from the value
OP = "exp"
#: what gives a sum back its summed axes, as `keepdims=True` does (`lax.broadcast_in_dim`, `[..., None]`)
KEEPING = ("broadcast_in_dim", "expand_dims", "reshape")
#: the modules whose functions the formulas are spelled with
MODULES = ("jax.numpy", "jax.lax", "jax.nn", "jax.scipy.special")
_DEPTH = 8  # names followed, at most, from one operand to the expression bound to it


def formulas(program: str) -> list[str]:
    """The formulas `program` writes by hand (`FORMULAS`), in the order it first writes them."""
    found = _found(program)
    return list(dict.fromkeys(formula for _, formula, _ in found)) if found else []


def rewritten(program: str, formula: str) -> str:
    """`program` with every place it writes `formula` by hand computed by JAX's function, `jax`
    imported where it is not; "" when it writes none."""
    found = [(node, text) for node, kind, text in _found(program) or [] if kind == formula]
    if not found:
        return ""
    for node, text in sorted(found, key=lambda f: (f[0].lineno, f[0].col_offset), reverse=True):
        program = source_fix.replaced(program, node, text)
    return source_fix.after_imports(program, []) or program


def _found(program: str) -> list[tuple[ast.AST, str, str]] | None:
    """Each outermost expression that writes a formula: (the node, the formula, its stable call)."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    reader = _Reader(tree, program)
    found, inside = [], set()
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        match = reader.formula(node)
        if match:
            found.append((node, *match))
            inside.update(id(n) for n in ast.walk(node))
    return found


class _Reader:
    """Reads a program's expressions as the JAX operations they compute, through its imports and the
    names each scope binds once."""

    def __init__(self, tree: ast.Module, source: str):
        self.tree, self.source = tree, source
        self.modules = _modules(tree)
        self.scope_of: dict[int, ast.AST] = {}
        self.bound: dict[int, dict[str, ast.expr]] = {}  # by scope: the names it binds once, to their values
        self.local: dict[int, set[str]] = {}  # by scope: every name it binds (its parameters too)
        self._scan(tree)

    def _scan(self, scope: ast.AST) -> None:
        stores: dict[str, int] = {}
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stores.update((a.arg, 2) for a in ast.walk(scope.args) if isinstance(a, ast.arg))
        values = {}
        for child in _in_scope(scope):
            self.scope_of[id(child)] = scope
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                stores[child.id] = stores.get(child.id, 0) + 1
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
                values[child.targets[0].id] = child.value
            if isinstance(child, _SCOPES):
                self._scan(child)
        self.local[id(scope)] = set(stores)
        self.bound[id(scope)] = {name: values[name] for name, n in stores.items() if n == 1 and name in values}

    def value(self, node: ast.expr) -> ast.expr:
        """The expression a name stands for, where its scope (or the module, for a name its scope does
        not bind) binds it once."""
        for _ in range(_DEPTH):
            if not isinstance(node, ast.Name):
                break
            scope = id(self.scope_of.get(id(node), self.tree))
            bound = self.bound[scope] if node.id in self.local.get(scope, ()) else self.bound[id(self.tree)]
            if node.id not in bound:
                break
            node = bound[node.id]
        return node

    def called(self, node: ast.AST, *names: str) -> ast.Call | None:
        """`node` (followed through names) as a call of one of the JAX functions `names`."""
        node = self.value(node) if isinstance(node, ast.expr) else node
        if not isinstance(node, ast.Call):
            return None
        first, _, rest = (source_fix.dotted(node.func) or "").partition(".")
        module, _, last = ".".join(filter(None, (self.modules.get(first, ""), rest))).rpartition(".")
        return node if module in MODULES and last in names else None

    def exp_of(self, node: ast.AST) -> ast.expr | None:
        """The argument of the `exp` that `node` is."""
        call = self.called(node, "exp")
        return call.args[0] if call and len(call.args) == 1 else None

    def summed(self, node: ast.AST) -> tuple[ast.expr, str, bool] | None:
        """(what is summed, its axis as written, keepdims) where `node` is a sum of an `exp`."""
        node = self.value(node)
        kept = self.called(node, *KEEPING)
        if kept is not None and kept.args or _new_axis(node):  # the sum with its axes kept
            inner = self.summed(kept.args[0] if kept is not None else node.value)
            return (inner[0], inner[1], True) if inner else None
        if not isinstance(node, ast.Call):
            return None
        call = self.called(node, "sum")
        method = isinstance(node.func, ast.Attribute) and node.func.attr == "sum" and self.exp_of(node.func.value)
        if call is None and not method:
            return None
        operand, positional = ((node.args[0] if node.args else None, node.args[1:]) if call
                               else (node.func.value, node.args))
        keywords = {k.arg: k.value for k in node.keywords}
        axis = keywords.get("axis", positional[0] if positional else None)
        keep = keywords.get("keepdims")
        keepdims = isinstance(keep, ast.Constant) and keep.value is True
        exp = self.exp_of(operand) if operand is not None else None
        axis = ast.get_source_segment(self.source, axis) or ast.unparse(axis) if axis is not None else "None"
        return (exp, axis, keepdims) if exp is not None else None

    def text(self, node: ast.expr) -> str:
        """`node` as the program spells it, in parentheses where it is not one term."""
        text = ast.get_source_segment(self.source, node) or ast.unparse(node)
        return (text if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant))
                else f"({text})")

    def formula(self, node: ast.AST) -> tuple[str, str] | None:
        """(the formula `node` writes by hand, its stable call), or None."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            x, total = self.exp_of(node.left), self.summed(node.right)
            # the sum broadcasts back over the summed axes: they are kept, or they are all of them
            kept = total and (total[2] or total[1] == "None")
            if x is not None and kept and ast.dump(self.value(total[0])) == ast.dump(self.value(x)):
                return "softmax", FORMULAS["softmax"].format(x=self.text(x), axis=f", axis={total[1]}")
            return None
        log = self.called(node, "log", "log1p") if isinstance(node, ast.Call) else None
        if log is None or len(log.args) != 1:
            return None
        inner = log.args[0]
        saturating = self._of_saturating(inner, log1p=self.called(log, "log1p") is not None)
        if saturating:
            return saturating
        if self.called(log, "log1p") is not None:
            x = self.exp_of(inner)
            return ("softplus", FORMULAS["softplus"].format(x=self.text(x))) if x is not None else None
        total = self.summed(inner)
        if total:
            return "logsumexp", FORMULAS["logsumexp"].format(
                x=self.text(total[0]), axis=("" if total[1] == "None" else f", axis={total[1]}")  # its default
                + (", keepdims=True" if total[2] else ""))
        terms = self._added(inner)
        if terms is None:
            return None
        ones = [t for t in terms if _one(t)]
        exps = [self.exp_of(t) for t in terms]
        if len(ones) == 1 and sum(e is not None for e in exps) == 1:
            return "softplus", FORMULAS["softplus"].format(x=self.text(next(e for e in exps if e is not None)))
        if all(e is not None for e in exps):
            return "logaddexp", FORMULAS["logaddexp"].format(a=self.text(exps[0]), b=self.text(exps[1]))
        return None

    def _of_saturating(self, inner: ast.expr, log1p: bool) -> tuple[str, str] | None:
        """(the formula, its stable call) where a `log` (`log1p`) is taken of a function that rounds to
        0 or 1 in any float: `log(sigmoid(z))`, `log(1 - sigmoid(z))`, `log1p(-sigmoid(z))`,
        `log(softmax(x, axis))`."""
        node = self.value(inner)
        if log1p:
            negated = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            sigmoid = self.called(node.operand, "sigmoid", "expit") if negated else None
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _one(node.left):
            sigmoid, negated = self.called(node.right, "sigmoid", "expit"), True
        else:
            sigmoid, negated = self.called(node, "sigmoid", "expit"), False
            softmax = self.called(node, "softmax")
            if softmax is not None and len(softmax.args) == 1:
                axis = {k.arg: k.value for k in softmax.keywords}.get("axis")
                axis = f", axis={ast.get_source_segment(self.source, axis) or ast.unparse(axis)}" if axis else ""
                return "log_softmax", FORMULAS["log_softmax"].format(x=self.text(softmax.args[0]), axis=axis)
        if sigmoid is None or len(sigmoid.args) != 1:
            return None
        z = self.text(sigmoid.args[0])
        return LOG_SIGMOID, FORMULAS[LOG_SIGMOID].format(x=f"-{z}" if negated else z)

    def _added(self, node: ast.expr) -> list[ast.expr] | None:
        """The two terms of an addition `node` is (`a + b`, `jnp.add(a, b)`)."""
        node = self.value(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return [node.left, node.right]
        call = self.called(node, "add")
        return list(call.args) if call is not None and len(call.args) == 2 else None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _in_scope(node: ast.AST):
    """The nodes of `node`'s own scope: not inside the functions and classes it defines (those are
    listed, not entered)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, _SCOPES):
            yield from _in_scope(child)


def _modules(tree: ast.Module) -> dict[str, str]:
    """What each name the program imports stands for (`jnp`: `jax.numpy`; `exp`: `jax.numpy.exp`)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _new_axis(node: ast.expr) -> bool:
    """Whether `node` indexes with `None` (`total[..., None]`)."""
    return isinstance(node, ast.Subscript) and any(isinstance(n, ast.Constant) and n.value is None
                                                   for n in ast.walk(node.slice))


def _one(node: ast.expr) -> bool:
    """Whether `node` is the constant 1 (`1`, `1.0`, `jnp.float32(1.0)`, `jnp.asarray(1.0)`)."""
    while isinstance(node, ast.Call) and node.args and \
            (source_fix.dotted(node.func) or "").rpartition(".")[2] in ("asarray", "array", "float32", "float64"):
        node = node.args[0]
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value == 1


def op_of(formula: str) -> str:
    """The operation whose non-finite value `formula` keeps away: `log`'s at its pole for a function
    that saturates, else `exp`'s overflow (`OP`)."""
    return "log" if formula in SATURATING else OP


def function(formula: str) -> str:
    """The JAX function that computes `formula` (`jax.nn.logsumexp`)."""
    return FORMULAS[formula].partition("(")[0]


def in_words(formula: str) -> str:
    """The fix of `formula`, in the report's words."""
    if formula in SATURATING:  # written in one expression, or a sigmoid and its `log` apart
        return f"the `log` of its `{SATURATING[formula]}` computed by `{function(formula)}`"
    return f"the formula written by hand computed by `{function(formula)}`"


def evidence(formula: str, kind: str, underflow: bool = False) -> str:
    """Why the value comes from the formula, in the words of the log and the report's evidence: `exp`
    overflows in it and the program made float64 still fails, or (`underflow`) every term it adds
    underflows to 0."""
    why = (f"`{SATURATING[formula]}` is exactly {'0' if formula == 'log_softmax' else '1 or 0'} under `log` in a "
           "formula written by hand, in float64 too" if formula in SATURATING else
           f"`{OP}` underflows to 0 in a formula written by hand" if underflow else
           f"made float64, the program still fails: `{OP}` overflows in a formula written by hand")
    return (f"The program checks a non-finite value ({kind}); {why}; it runs through with the formula computed "
            f"by `{function(formula)}`, so that is where the value comes from.")
