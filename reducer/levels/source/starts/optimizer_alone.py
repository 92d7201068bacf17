"""The optimizer alone: a training loop whose loss does not fall, reduced to the program's own
optimizer on a toy convex problem, under the program's own check.

A person who sees `assert losses[-1] < losses[0]` fail after training a model isolates the optimizer
before anything else: made the way the program makes it, does it descend `p * p`? Deleting
statements cannot get there from a training loop (the model, the data and the loop all feed the
losses the check reads), so this start writes that program itself, for a failing ordering check
(`own-check … reads=order`) of a script that makes an optimizer of a library `reducer.libraries`
knows (Optax here; the toy's update lines are the library's):

    <the imports and definitions the optimizer's construction reads>
    warmup = 100                                # the program's own statements, or values a run showed
    optimizer = build_optimizer(3e-4, warmup)   # the program's own expression
    f = lambda p: p * p
    params = 1.0                                # then jnp.ones(3)
    opt_state = optimizer.init(params)
    losses = [f(params)]
    for step in range(2):                       # one update without a loop first; the program's loop last
        updates, opt_state = optimizer.update(jax.grad(f)(params), opt_state, params)
        params = params + updates
        losses.append(f(params))
    assert losses[-1] < losses[0], f"loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}"

The proposals come smallest first: one update (`updates, opt_state = optimizer.update(jax.grad(f)(params),
optimizer.init(params), params)`; `losses = [f(params), f(params + updates)]`) on a scalar, then on
an array; two steps (a warmup schedule's first rate is 0, which changes nothing: the check would
compare a value with itself); the program's own loop, where its range can be had.

The check is the program's own statement; the names it reads are bound to the toy's losses as
`training_loop.check_losses` reads them (a history it subscripts, a loss before or after training),
its constants by the program's own statements; a history the program keeps under a key of a dict
(`history["loss"]`) is the list itself (`training_loop.flattened`). What the construction reads
comes from `program_slice`; a value none of the program's statements can give (a parameter, `config.lr`) is read
from one run of the script stopped where the optimizer is made. Where any of this cannot be told, no
program is proposed.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Callable, Iterator

from oracles import kinds
from oracles.outcome import RunResult, Signature
from reducer.levels.source.representation import tokens
from reducer.libraries import OptimizerLibrary, Toy
from reducer.levels.source.starts.program_slice import (Scope, Slice, binds, changed_elsewhere, computes_nothing,
                                                        instrumented, modules, outer_names, recorded, scope_of,
                                                        slice_for)
from reducer.levels.source.starts.training_loop import (Construction, Losses, check_losses, failing_check, flattened,
                                                        loop_range, optimizer_construction, training_loop)

#: the toy problems, smallest first: (the parameters, the loss they are trained on)
PROBLEMS = (("1.0", "lambda p: p * p"), ("jnp.ones(3)", "lambda p: jnp.sum(p * p)"))
#: how the toy problem imports `jnp` where the program does not (a library's own: `toy_imports`)
TOY_IMPORTS = {"jnp": "import jax.numpy as jnp"}


class OptimizerAlone:
    """The start: for a failing ordering check of a script that makes an optimizer, the optimizer on
    a toy problem under that check (`proposals`)."""

    name = "optimizer-alone"

    def __init__(self):
        self.message = ""  # the failing check's masked message, from the signature `applies` was given

    def applies(self, signature: Signature) -> bool:
        self.message = signature.get("message")
        return (kinds.own_check(signature) and signature.get("check") == "assert"
                and signature.get("reads") == "order")

    def proposals(self, program: str, run: Callable[[str], RunResult]) -> Iterator[str]:
        try:
            tree = ast.parse(program)
        except (SyntaxError, ValueError):
            return
        made, check = optimizer_construction(tree), failing_check(tree, self.message)
        if made is None or check is None:
            return
        setup = optimizer_setup(program, tree, made, run)
        if setup is None:
            return
        checked = check_setup(tree, check, setup)
        if checked is None:
            return
        yield from toy_programs(tree, setup, checked)


@dataclass
class Setup:
    """The statements of the program that come before the toy problem (module-level, then local, in
    the program's order; literal assignments of recorded values last), the optimizer's name(s) and
    its library."""

    module: list[ast.stmt]
    local: list[ast.stmt]
    optimizer: str
    library: OptimizerLibrary

    def bound(self) -> set[str]:
        return {name for stmt in self.module + self.local for name in binds(stmt)}


def optimizer_setup(program: str, tree: ast.Module, made: Construction, run) -> Setup | None:
    """The statements the optimizer's construction needs, ending with it (`name = expr`), values of
    names no statement gives read from one run of the script; None when some cannot be had."""
    scope = scope_of(tree, made.stmt)
    if scope is None:
        return None
    imports = modules(tree)
    names = outer_names(made.expr)
    unsure = {n for n in names if _from_run(n, scope, imports)}
    expr, literals = made.expr, []
    if unsure:
        found = _recorded_values(program, made, unsure, run)
        if found is None:
            return None
        expr, literals = found
    sliced = slice_for(outer_names(expr) - {t.id for t in (a.targets[0] for a in literals)}, scope)
    if sliced.unbound:
        return None
    name = made.name or made.library.target
    built = ast.parse(f"{name} = None").body[0]
    built.value, built.lineno = expr, made.stmt.lineno
    return Setup(sliced.module, sliced.local + literals + [built], name, made.library)


def _from_run(name: str, scope: Scope, imports: set[str]) -> bool:
    """Whether a name the construction reads is better read from a run: a parameter, a name bound in a
    way this reading does not follow, or a local name whose statements compute with the program's own
    code (`steps = len(loader) * epochs`)."""
    at_module = {bound for stmt in scope.module for bound in binds(stmt)}
    if not any(name in binds(s) for s in scope.before):
        return name in scope.parameters or name not in at_module
    local = slice_for({name}, Scope(scope.before, scope.parameters, []))
    return bool(local.unbound - at_module) or not all(computes_nothing(s, imports) for s in local.local)


def _recorded_values(program: str, made: Construction, names: set[str], run):
    """The construction with what a run showed of `names` in it: a chain read from an object
    (`config.lr`) replaced by its value, a plain name given a literal assignment. None when the run
    shows no literal for one of them."""
    shown = _shown_expressions(made.expr, names)
    if shown is None:
        return None
    text = instrumented(program, made.stmt, shown)
    values = recorded(run(text).output, len(shown)) if text is not None else None
    if values is None or any(v is None for v in values):
        return None
    literals, replaced = [], {}
    for expr, value in zip(shown, values):
        if isinstance(expr, ast.Name):
            literals.append(ast.Assign([ast.Name(expr.id, ast.Store())], value, lineno=made.stmt.lineno))
        else:
            replaced[ast.dump(expr)] = value
    return _replace(made.expr, replaced), literals


def _shown_expressions(expr: ast.expr, names: set[str]) -> list[ast.expr] | None:
    """What to read of each name: the attribute chains it is read through (`config.lr`), or the name."""
    parents = {child: node for node in ast.walk(expr) for child in ast.iter_child_nodes(node)}
    shown: dict[str, ast.expr] = {}
    for name in sorted(names):
        uses = [n for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id == name]
        chains = []
        for use in uses:
            node = use
            while isinstance(parents.get(node), ast.Attribute) and parents[node].value is node:
                node = parents[node]
            if isinstance(parents.get(node), ast.Call) and parents[node].func is node:
                return None  # a method of the object: no value to show
            chains.append(node)
        if any(c is u for c, u in zip(chains, uses)):
            chains = [ast.Name(name, ast.Load())]
        for chain in chains:
            shown.setdefault(ast.dump(chain), chain)
    return list(shown.values())


def _replace(expr: ast.expr, replaced: dict[str, ast.expr]) -> ast.expr:
    class Replace(ast.NodeTransformer):
        def visit_Attribute(self, node):
            found = replaced.get(ast.dump(node))
            return copy.deepcopy(found) if found is not None else self.generic_visit(node)

    return Replace().visit(copy.deepcopy(expr)) if replaced else expr


@dataclass
class Checked:
    """The check and what it needs: the names that hold its losses, the constants' statements, the
    loop to run (the program's range, or None) and its variable."""

    check: ast.Assert
    losses: Losses
    local: list[ast.stmt]
    module: list[ast.stmt]
    steps: ast.expr | None
    variable: str


def check_setup(tree: ast.Module, check: ast.Assert, setup: Setup) -> Checked | None:
    """The check's losses, its constants and the program's loop, read where the check stands; None
    when a name it reads cannot be bound."""
    scope = scope_of(tree, check)
    if scope is None:
        return None
    imports, known = modules(tree), frozenset(setup.bound())

    def constant(name: str) -> bool:
        found = slice_for({name}, scope, known)
        return (not found.unbound and all(computes_nothing(s, imports) for s in found.statements())
                and not changed_elsewhere(tree, {name} | {n for s in found.statements() for n in binds(s)},
                                          found.statements()))

    losses = check_losses(tree, check, constant)
    loop = training_loop(tree, check)
    variable = loop.target.id if loop is not None and isinstance(loop.target, ast.Name) else "step"
    if losses is None:
        return None
    needed = slice_for(losses.others - {variable}, scope, known)
    if needed.unbound:
        return None
    steps = loop_range(loop) if loop is not None else None
    if steps is not None:
        counted = slice_for(outer_names(steps), scope, known)
        if counted.unbound or not all(computes_nothing(s, imports) for s in counted.statements()):
            steps = None
        else:
            needed = Slice(needed.module + counted.module, needed.local + counted.local, set())
    check, losses.histories = flattened(check, losses.histories)
    return Checked(check, losses, needed.local, needed.module, steps, variable)


def toy_programs(tree: ast.Module, setup: Setup, checked: Checked) -> Iterator[str]:
    """The proposals, smallest first: one update on a scalar, then on an array; a loop of two steps (a
    warmup schedule's first rate is 0); the program's own loop."""
    ranges = [None, "range(2)"]
    if checked.steps is not None and ast.unparse(checked.steps) not in ranges:
        ranges.append(ast.unparse(checked.steps))
    made = [_program(tree, setup, checked, steps, params, loss) for steps in ranges for params, loss in PROBLEMS]
    yield from sorted(made, key=tokens)


def _program(tree: ast.Module, setup: Setup, checked: Checked, steps: str | None, params: str, loss: str) -> str:
    module = _unique(setup.module + checked.module)
    local = _unique(setup.local[:-1] + checked.local) + setup.local[-1:]
    imports = {**setup.library.toy_imports, **TOY_IMPORTS}
    wanted = set(setup.library.toy_imports) | ({"jnp"} if "jnp." in params + loss else set())
    bound = {n for s in module + local for n in binds(s)}
    at_module = Scope(module=[s for s in tree.body if binds(s)])
    ours = []
    for name in sorted(wanted - bound):
        found = slice_for({name}, at_module)
        if not found.unbound and found.module:
            module = _unique(module + found.module)
        else:
            ours.append(imports[name])
    module = sorted(module, key=lambda s: (not isinstance(s, (ast.Import, ast.ImportFrom)), s.lineno))
    future = [s for s in module if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    head = [ast.unparse(s) for s in future] + ours + [ast.unparse(s) for s in module if s not in future]
    taken = {n for s in module + local for n in binds(s)} | {n.id for n in ast.walk(checked.check)
                                                             if isinstance(n, ast.Name)}
    f, p, state, updates = (_fresh(n, taken) for n in ("f", "params", "opt_state", "updates"))
    body = [ast.unparse(s) for s in sorted(local[:-1], key=lambda s: s.lineno)] + [ast.unparse(local[-1])]
    body += _toy(checked, setup.library, Toy(setup.optimizer, f, p, state, updates), steps, params, loss)
    return ast.unparse(ast.parse("\n".join(head + body) + "\n")) + "\n"


def _toy(checked: Checked, library: OptimizerLibrary, toy: Toy, steps: str | None, params: str, loss: str) -> list[str]:
    """The toy problem under the check: one update (`steps` None) or a loop over `steps`, each loss
    kept where the check reads it; the update's lines are the library's."""
    f, p = toy.loss, toy.params
    losses = checked.losses
    before = f"{f}({p})"
    lines = [f"{f} = {loss}", f"{p} = {params}"]
    if steps is None:
        update, given = library.one_update(toy)
        after = f"{f}({given})"
        lines += update
        lines += _histories(losses.histories, [before, after])
        if checked.variable in {n.id for n in ast.walk(checked.check) if isinstance(n, ast.Name)}:
            lines.append(f"{checked.variable} = 0")
    else:
        after = before
        lines += library.first_state(toy)
        lines += _histories(losses.histories, [before])
    lines += [f"{name} = {before}" for name in losses.first]
    if steps is not None:
        lines.append(f"for {checked.variable} in {steps}:")
        lines += [f"    {line}" for line in library.step(toy, checked.variable)]
        lines += [f"    {ast.unparse(h)}.append({after})" for h in losses.histories]
    lines += [f"{name} = {after}" for name in losses.last]
    return lines + [ast.unparse(checked.check)]


def _histories(histories: list[ast.expr], values: list[str]) -> list[str]:
    """Each history holding `values` at first: `losses = [...]`, or `history = {'loss': [...]}` for one
    kept under a key."""
    keyed: dict[str, list[str]] = {}
    shown = f"[{', '.join(values)}]"
    lines = []
    for history in histories:
        if isinstance(history, ast.Name):
            lines.append(f"{history.id} = {shown}")
        else:
            keyed.setdefault(history.value.id, []).append(repr(history.slice.value))
    lines += [f"{name} = {{{', '.join(f'{k}: {shown}' for k in keys)}}}" for name, keys in keyed.items()]
    return lines


def _unique(stmts: list[ast.stmt]) -> list[ast.stmt]:
    seen, found = set(), []
    for stmt in stmts:
        if id(stmt) not in seen:
            seen.add(id(stmt))
            found.append(stmt)
    return found


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name
