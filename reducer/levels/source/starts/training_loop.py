"""Reading a training loop from a script's text: where its optimizer is made, the loop that trains,
the check that the loss fell, and which of the names that check reads hold the losses. What is
known of each library (Optax, JAX's example optimizers, Flax's holders, progress bars) is read
through `reducer.libraries`.

- The optimizer: where the program uses one (the object of `.init(params)`, a function a
  constructor gave), traced back through its assignments (`optimizer = build_optimizer(3e-4, warmup)`,
  `self.tx = …`, `opt_init, opt_update, get_params = …`), through what holds it (a holder's
  `held`) to the call that makes it: a library's constructor (`optax.chain(…)`,
  `optax.inject_hyperparams(optax.sgd)(…)`, `optimizers.adam(…)`) or a function of the script that
  returns one.
- The loop: the `for … in range(…)` around the check (a progress bar's range too), else the last
  one before it.
- The check: the `assert` with an ordering whose message, masked, is the failure's.
- The losses: a name the check subscripts is their history (`losses[-1] < losses[0]`, and
  `history["loss"][-1]`, read as the list itself where the check reads one key: `flattened`);
  another name is a loss value, the first (`initial_loss`, `prev`, `loss0`, or the one the program
  binds first) or the last, unless the statements that bind it compute nothing of the program's
  (`threshold = 0.5`: a constant of the check).
"""
from __future__ import annotations

import ast
import copy
import re
from collections import Counter
from dataclasses import dataclass, field

from oracles.own_check import masked
from reducer.libraries import HOLDERS, OPTIMIZERS, OptimizerLibrary
from reducer.libraries import loop_range as unwrapped
from reducer.levels.source.check_values import ordered_sides
from reducer.levels.source.computed_check import _own_returns
from reducer.levels.source.starts.program_slice import BUILTINS, modules, path_to

_FIRST = re.compile(r"init|first|start|begin|before|prev|old|orig|base|^.*0$", re.I)
_LAST = re.compile(r"final|last|end|after|new|cur", re.I)
MAX_TRACE = 8  # assignments followed from a use of the optimizer back to where it is made


def failing_check(tree: ast.Module, message: str) -> ast.Assert | None:
    """The `assert` whose test orders two values and whose message, masked, is `message` (the one
    such assert when none says it)."""
    ordering = [n for n in ast.walk(tree) if isinstance(n, ast.Assert) and ordered_sides([n.test])]
    said = [n for n in ordering if _says(n, message)]
    return said[0] if said else ordering[0] if len(ordering) == 1 else None


def _says(check: ast.Assert, message: str) -> bool:
    """Whether the check's message, masked, can be `message`: its text as written, or an f-string's
    text around what it formats (a number or an array, masked either way)."""
    msg = check.msg
    if msg is None:
        return message == ""
    if isinstance(msg, ast.Constant) and isinstance(msg.value, str):
        return masked(msg.value) == message
    if not isinstance(msg, ast.JoinedStr):
        return False
    pieces = [masked(str(p.value)) if isinstance(p, ast.Constant) else None for p in msg.values]
    pattern = r"\s*".join(".*?" if p is None else re.escape(p) for p in pieces if p != "")
    return re.fullmatch(pattern, message, re.S) is not None


@dataclass(frozen=True)
class Construction:
    """Where the optimizer is made: the expression, the statement it stands in, the name(s) the
    program gives it (`optimizer`, `tx`, `opt_init, opt_update, get_params`; "" when it is made inside
    another call), and its library."""

    expr: ast.expr
    stmt: ast.stmt
    name: str
    library: OptimizerLibrary


def optimizer_construction(tree: ast.Module) -> Construction | None:
    """The call that makes the optimizer whose `init` / `update` the program calls (or that a
    `TrainState` / `nnx.Optimizer` is given), or None."""
    reader = _Reader(tree)
    uses = [use for adapter in (*OPTIMIZERS, *HOLDERS) for use in adapter.uses(tree)]
    within = {node: stmt for stmt in ast.walk(tree) if isinstance(stmt, ast.stmt) for node in ast.walk(stmt)}
    for use in uses:  # made where it is used (`tx=build_optimizer(lr, warmup)`), or where a name it is read by is bound
        found = reader.made(use, MAX_TRACE, within.get(use))
        if found is not None:
            return found
    return None


class _Reader:
    def __init__(self, tree: ast.Module):
        self.libraries = {name: lib for lib in reversed(OPTIMIZERS) for name in lib.bound(tree)}
        self.functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
        self.assigned: list[tuple[ast.expr, ast.expr, ast.stmt]] = []  # (target, value, statement)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self.assigned.append((node.targets[0], node.value, node))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self.assigned.append((node.target, node.value, node))

    def made(self, expr: ast.expr, depth: int, stmt: ast.stmt | None = None, name: str = "") -> Construction | None:
        """Where the optimizer `expr` refers to is made, following assignments at most `depth` deep."""
        if depth <= 0:
            return None
        if isinstance(expr, ast.Call):
            library = self.maker(expr, MAX_TRACE)
            if library is not None:
                return Construction(expr, stmt, name, library) if stmt is not None else None
            held = next((h for h in (holder.held(expr) for holder in HOLDERS) if h is not None), None)
            if held is not None:
                return self.made(held, depth - 1, stmt, "")
            return self._returned(expr, depth)
        key = _reference(expr)
        if key is None:
            return None
        for target, value, at in self.assigned:
            unpacked = isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts)
            if _reference(target) == key or unpacked and key in {e.id for e in target.elts}:
                named = ", ".join(e.id for e in target.elts) if unpacked else getattr(target, "id", "")
                found = self.made(value, depth - 1, at, named)
                if found is not None:
                    return found
        return None

    def _returned(self, call: ast.Call, depth: int) -> Construction | None:
        """Where the optimizer a function of the script returns inside what holds it is made
        (`return nnx.Optimizer(model, tx)`, `tx` made in that function)."""
        function = self.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        for ret in _own_returns(function) if function is not None else []:
            found = self.made(ret.value, depth - 1, ret, "")
            if found is not None:
                return found
        return None

    def maker(self, call: ast.Call, depth: int) -> OptimizerLibrary | None:
        """The library whose optimizer a call makes: one of its constructors (not a schedule, a loss or
        `apply_updates`), or a function of the script that returns what one makes; None for another call."""
        func = call.func
        while isinstance(func, ast.Call):  # optax.inject_hyperparams(optax.sgd)(…)
            func = func.func
        names = []
        while isinstance(func, ast.Attribute):
            names.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return None
        library = self.libraries.get(func.id)
        if library is not None:
            return library if library.makes(names[0] if names else func.id) else None
        function = self.functions.get(func.id)
        if function is None or names or depth <= 0:
            return None
        returned = [r.value for r in _own_returns(function)]
        local = {_reference(t): v for t, v, s in self.assigned if any(s is n for n in ast.walk(function))}
        for value in returned:
            value = local.get(_reference(value), value) if _reference(value) else value
            found = self.maker(value, depth - 1) if isinstance(value, ast.Call) else None
            if found is not None:
                return found
        return None


def _reference(expr: ast.expr) -> str | None:
    """What an expression refers to, as assignments name it: `optimizer`, `self.tx`."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return f"{expr.value.id}.{expr.attr}"
    return None


def training_loop(tree: ast.Module, check: ast.stmt) -> ast.For | None:
    """The `for … in range(…)` loop around the check, else the last one before it in the blocks
    around it."""
    path = path_to(tree.body, check) or []
    around = [body[k] for body, k in path[:-1] if isinstance(body[k], ast.For)]
    before = [s for body, k in reversed(path) for s in reversed(body[:k]) if isinstance(s, ast.For)]
    for loop in [*reversed(around), *before]:
        if loop_range(loop) is not None:
            return loop
    return None


def loop_range(loop: ast.For) -> ast.Call | None:
    """The `range(…)` call a loop runs over (also inside a progress bar: `tqdm(range(n))`, `trange(n)`
    as `range(n)`)."""
    it = unwrapped(loop.iter)
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords:
        return it
    return None


@dataclass
class Losses:
    """How the check's names are bound in the program built around it: the histories it subscripts
    (each as `name` or `name[key]`), the loss values before and after training, and the other names it
    reads (constants, the loop's variable)."""

    histories: list[ast.expr] = field(default_factory=list)
    first: list[str] = field(default_factory=list)
    last: list[str] = field(default_factory=list)
    others: set[str] = field(default_factory=set)


def check_losses(tree: ast.Module, check: ast.Assert, constant) -> Losses | None:
    """Which names of `check` hold the losses; `constant(name)` says whether the statements binding a
    name compute nothing of the program's. None when the check reads no loss."""
    imports = modules(tree)
    losses = Losses()
    histories = _histories(check)
    for history in histories:
        losses.histories.append(history)
    held = {h.id if isinstance(h, ast.Name) else h.value.id for h in histories}
    values = []
    for name in sorted(_names(check.test) - held - imports - BUILTINS):
        (losses.others.add if constant(name) else values.append)(name)
    if check.msg is not None:
        losses.others |= _names(check.msg) - held - imports - BUILTINS - set(values)
    if not values and not histories:
        return None
    first_bound = _first_bindings(tree)
    unsure = [v for v in values if bool(_FIRST.search(v)) == bool(_LAST.search(v))]
    for value in values:
        if value in unsure:
            continue
        (losses.first if _FIRST.search(value) else losses.last).append(value)
    unsure.sort(key=lambda v: first_bound.get(v, 1 << 30))
    if len(unsure) >= 2 and not losses.first:
        losses.first.append(unsure.pop(0))
    losses.last += unsure
    return losses


def flattened(check: ast.Assert, histories: list[ast.expr]) -> tuple[ast.Assert, list[ast.expr]]:
    """The check with a history kept under the one key the check reads of its dict
    (`history["loss"][-1] < history["loss"][0]`) read as the list itself (`history[-1] < history[0]`):
    the same comparison of the same values, without the container the toy problem has no use for."""
    uses = Counter(n.id for n in ast.walk(check) if isinstance(n, ast.Name))
    keyed = [h for h in histories if isinstance(h, ast.Subscript)]
    per_base = Counter(h.value.id for h in keyed)
    single = {}
    for history in keyed:
        shown = sum(1 for n in ast.walk(check) if isinstance(n, ast.Subscript) and ast.dump(n) == ast.dump(history))
        if per_base[history.value.id] == 1 and shown == uses[history.value.id]:
            single[ast.dump(history)] = history.value.id
    if not single:
        return check, histories

    class Flatten(ast.NodeTransformer):
        def visit_Subscript(self, node):
            name = single.get(ast.dump(node))
            return ast.Name(name, ast.Load()) if name else self.generic_visit(node)

    flat = [ast.Name(single[ast.dump(h)], ast.Load()) if ast.dump(h) in single else h for h in histories]
    return Flatten().visit(copy.deepcopy(check)), flat


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _histories(check: ast.Assert) -> list[ast.expr]:
    """The histories a check subscripts: `losses` of `losses[-1]`, `history["loss"]` of `history["loss"][0]`."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(check):
        if not isinstance(node, ast.Subscript):
            continue
        inner = node.value
        if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) and _keyed(inner):
            found.setdefault(ast.unparse(inner), inner)
        elif isinstance(inner, ast.Name) and not _keyed(node):
            found.setdefault(inner.id, inner)
    return list(found.values())


def _keyed(node: ast.Subscript) -> bool:
    return isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)


def _first_bindings(tree: ast.Module) -> dict[str, int]:
    """The line where the program first assigns each name."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found[node.id] = min(found.get(node.id, node.lineno), node.lineno)
    return found
