"""The operation at fault: where, in a function's jaxpr, two ways of computing it part.

A watch that found a disagreement (Enzyme-JAX's gradient against JAX's AD, `jit` against op by op)
hands over the function as a jaxpr and a test `parts(fn, args)`. Each test compiles a function, so
the search counts them (at most `MAX_TESTS`) and never runs one twice.

- With a wanted operation (the one the reduction's signature names, `REDUCER_WANTED_OPERATION`, set
  by the job for the candidates it judges), that operation is confirmed first, in at most two tests,
  at its first equation that depends on the inputs. A derivative is confirmed at that equation on
  its own, at the values it reads (it must disagree), and by the function's prefix up to it (or up
  to the call holding it), which must disagree too; a compiled result (where one operation compiled
  alone is what op by op runs) by the prefix up to it, which must disagree, and the prefix up to the
  step before, which must agree (a prefix that returns the function's own result is known to
  disagree and costs no test). A candidate whose fault lies elsewhere fails the confirmation and
  gets the whole search, so two different bugs still never share a name; one that shows the wanted
  fault and another one before it keeps the wanted name.
- Otherwise, the first equation whose value already disagrees is found by testing the prefixes of
  the jaxpr (a prefix computes everything up to that equation and returns its results) one by one,
  then, past a budget, by bisection; equations that do not depend on the inputs are skipped. A call
  (`pjit`, `custom_jvp_call` …) found so is entered, with its inputs at the values they had, until a
  primitive is reached.

The operation's name goes into the signature, so that two wrong-gradient bugs in different
operations never share one.
"""
from __future__ import annotations

import os

import numpy as np

#: equation parameters that hold the jaxpr of a call the search may enter
CALL_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
#: calls that are evaluated through their body when running op by op
INLINE = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint"}
MAX_TESTS = 24
#: tests kept for bisection (and calls entered) once the one-by-one scan has used the rest
LINEAR_RESERVE = 8
MAX_DEPTH = 8
#: where the harness learns the operation the wanted signature names
WANTED_ENV = "REDUCER_WANTED_OPERATION"


def wanted_operation() -> str | None:
    """The operation the reduction's signature names, when the job handed one to this run."""
    return os.environ.get(WANTED_ENV) or None


def evaluate(jaxpr, consts, args, stop: int | None = None, inline: bool | None = None) -> list:
    """Run `jaxpr` equation by equation; the results of equation `stop` (all outputs when None).
    With `inline` (by default: under `jax.disable_jit`), calls run through their bodies, so that
    nothing is compiled as a whole."""
    import jax
    from jax._src import core

    if inline is None:
        inline = bool(jax.config.jax_disable_jit)
    count = len(jaxpr.eqns) if stop is None else stop + 1
    read = _run(jaxpr, consts, args, count, inline)
    outvars = jaxpr.outvars if stop is None else jaxpr.eqns[stop].outvars
    return [read(v) for v in outvars if not isinstance(v, core.DropVar)]


def _run(jaxpr, consts, args, count: int, inline: bool):
    """Run the first `count` equations; a function that reads any variable or literal after them."""
    from jax._src import core

    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if isinstance(v, core.Literal) else env[v]

    for eqn in jaxpr.eqns[:count]:
        inner = _inner(eqn) if inline and eqn.primitive.name in INLINE else None
        if inner is not None:
            outs = evaluate(inner.jaxpr, inner.consts, [read(v) for v in eqn.invars], inline=True)
        else:
            outs = _bind(eqn, [read(v) for v in eqn.invars])
        for v, x in zip(eqn.outvars, outs):
            if not isinstance(v, core.DropVar):
                env[v] = x
    return read


def _bind(eqn, values) -> list:
    """Apply one equation to `values`; its results as a list."""
    with eqn.ctx.manager:
        outs = eqn.primitive.bind(*values, **eqn.primitive.get_bind_params(eqn.params))
    return list(outs) if eqn.primitive.multiple_results else [outs]


def _inner(eqn):
    """The closed jaxpr of a call equation, or None."""
    from jax._src import core

    for name in CALL_PARAMS:
        inner = eqn.params.get(name)
        if isinstance(inner, core.ClosedJaxpr):
            return inner
        if isinstance(inner, core.Jaxpr):
            return core.ClosedJaxpr(inner, ())
    return None


def _steps(jaxpr) -> list[int]:
    """The equations worth testing: floating-point results that depend on the inputs (the others
    come out the same either way)."""
    from jax._src import core

    live, steps = set(jaxpr.invars), []
    for i, eqn in enumerate(jaxpr.eqns):
        if any(not isinstance(v, core.Literal) and v in live for v in eqn.invars):
            live.update(eqn.outvars)
            if any(np.issubdtype(v.aval.dtype, np.inexact) for v in eqn.outvars if hasattr(v.aval, "dtype")):
                steps.append(i)
    return steps


class Frame:
    """One jaxpr the search looks into, at the arguments it ran with; what it has learnt of it."""

    def __init__(self, closed, args):
        self.closed, self.args = closed, list(args)
        self.jaxpr = closed.jaxpr
        self.steps = _steps(self.jaxpr)
        self.verdicts: dict[int, bool] = {}
        self._inputs: dict[int, list] = {}

    def inputs(self, index: int) -> list:
        """The values equation `index` reads, computed op by op."""
        import jax

        if index not in self._inputs:
            with jax.disable_jit():
                read = _run(self.jaxpr, self.closed.consts, self.args, index, inline=True)
                self._inputs[index] = [read(v) for v in self.jaxpr.eqns[index].invars]
        return self._inputs[index]

    def known_to_disagree(self) -> None:
        """Record that the whole jaxpr disagrees: so does its last step when it returns just that."""
        from jax._src import core

        if not self.steps:
            return
        outs = self.jaxpr.eqns[self.steps[-1]].outvars
        if not any(isinstance(v, core.DropVar) for v in outs) and list(outs) == list(self.jaxpr.outvars):
            self.verdicts[self.steps[-1]] = True

    def names_at_once(self) -> bool:
        """Whether the search names the operation without a test: one step, known to disagree,
        and not a call."""
        return len(self.steps) == 1 and self.verdicts.get(self.steps[0], False) \
            and _inner(self.jaxpr.eqns[self.steps[0]]) is None


class Search:
    """One search for the operation at fault: the test, its budget, and how many tests it ran."""

    def __init__(self, parts, budget: int = MAX_TESTS):
        self.parts, self.budget, self.tests = parts, budget, 0

    def _test(self, fn, args) -> bool:
        self.budget -= 1
        self.tests += 1
        try:
            return bool(self.parts(fn, args))
        except Exception:  # a computation the other way cannot run: not evidence either way
            return False

    def disagrees(self, frame: Frame, index: int) -> bool:
        """Whether the prefix of `frame` ending at equation `index` disagrees (tested once)."""
        if index not in frame.verdicts:
            if self.budget <= 0:
                return False
            jaxpr, consts = frame.jaxpr, frame.closed.consts
            frame.verdicts[index] = self._test(lambda *xs: evaluate(jaxpr, consts, xs, stop=index), frame.args)
        return frame.verdicts[index]

    def alone(self, eqn, values: list) -> bool:
        """Whether equation `eqn` by itself disagrees at `values`, its floating-point inputs
        varying (the rest held as they are)."""
        made = equation_function(eqn, values)
        if made is None or self.budget <= 0:
            return False
        return self._test(*made)

    def confirm(self, top: Frame, wanted: str, by_itself: bool) -> dict | None:
        """The wanted operation, when its first equation on the inputs' path is still where the two
        ways part; None otherwise. `by_itself`: that equation can disagree on its own (a derivative
        can; a single operation compiled is what op by op runs), and must, with the prefix of `top`
        up to it; else the prefix up to it must disagree and the one up to the step before agree."""
        path = _path_to(top.jaxpr, wanted)
        if path is None:
            return None
        frame = top
        for index in path[:-1]:
            frame = Frame(_inner(frame.jaxpr.eqns[index]), frame.inputs(index))
        index = path[-1]
        eqn, values = frame.jaxpr.eqns[index], frame.inputs(index)
        if by_itself:
            held = self.alone(eqn, values) and self.disagrees(top, path[0])
        else:
            before = [step for step in frame.steps if step < index]
            held = self.disagrees(frame, index) and not (before and self.disagrees(frame, before[-1]))
        return _found(eqn, values) if held else None

    def find(self, frame: Frame, depth: int = 0) -> dict | None:
        """The innermost equation of `frame` whose results already disagree; None when no prefix
        does."""
        steps = frame.steps
        if not steps or not self.disagrees(frame, steps[-1]):
            return None
        index = self._first(frame, steps)
        eqn = frame.jaxpr.eqns[index]
        inner = _inner(eqn)
        if inner is not None and depth < MAX_DEPTH:
            below = Frame(inner, frame.inputs(index))
            below.known_to_disagree()  # as the prefix ending at its call does
            found = self.find(below, depth + 1)
            if found is not None:
                return found
        return _found(eqn, frame.inputs(index))

    def _first(self, frame: Frame, steps: list[int]) -> int:
        """The first step that disagrees (the last one does). One by one while the budget allows,
        since a later equation that does not use the faulty value agrees again; then by bisection."""
        lo, hi = 0, len(steps) - 1
        while lo < hi and self.budget > LINEAR_RESERVE:
            if self.disagrees(frame, steps[lo]):
                return steps[lo]
            lo += 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.disagrees(frame, steps[mid]):
                hi = mid
            else:
                lo = mid + 1
        return steps[lo]


def _path_to(jaxpr, wanted: str, depth: int = 0) -> list[int] | None:
    """The equation indices, call by call, down to the first equation of `wanted` among the steps;
    None when there is none."""
    for index in _steps(jaxpr):
        eqn = jaxpr.eqns[index]
        if eqn.primitive.name == wanted:
            return [index]
        inner = _inner(eqn)
        if inner is not None and depth < MAX_DEPTH:
            below = _path_to(inner.jaxpr, wanted, depth + 1)
            if below is not None:
                return [index] + below
    return None


def locate(closed, args, parts, wanted: str | None = None, by_itself: bool = False,
           whole_disagrees: bool = True) -> dict | None:
    """The equation of `closed` (a ClosedJaxpr run on `args`) at fault by `parts(fn, args)`:
    {"operation", "inputs", "locate_tests"}; None when no prefix disagrees. `wanted`: the operation
    to confirm first (`Search.confirm`, with `by_itself`); `whole_disagrees`: the caller has seen
    `closed` as a whole disagree."""
    top = Frame(closed, args)
    if whole_disagrees:
        top.known_to_disagree()
    first = Search(parts)
    found = first.confirm(top, wanted, by_itself) if wanted and not top.names_at_once() else None
    if found is None:
        rest = Search(parts)
        found = rest.find(top)
        first.tests += rest.tests
    if found is not None:
        found["locate_tests"] = first.tests
    return found


def equation_function(eqn, values: list, kind=np.inexact):
    """Equation `eqn` as a function of its inputs of dtype `kind` (the others held at `values`), and
    those inputs' values; None when it has none."""
    from jax._src import core

    varying = [n for n, (v, x) in enumerate(zip(eqn.invars, values))
               if not isinstance(v, core.Literal) and np.issubdtype(_dtype(x), kind)]
    if not varying:
        return None

    def fn(*xs):
        held = list(values)
        for n, x in zip(varying, xs):
            held[n] = x
        return _bind(eqn, held)

    return fn, [values[n] for n in varying]


def _dtype(value) -> np.dtype:
    return value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype


def _found(eqn, values) -> dict:
    return {"operation": eqn.primitive.name, "inputs": _preview(values)}


def _preview(values) -> list:
    """The first few numbers of each value, for the report."""
    return [np.asarray(v).ravel()[:4].tolist() for v in values]
