"""The call-alone start: for a NaN or an Inf made inside a library call that no fix of the program's
own code takes away (`oracles.nonfinite.inside_call`), that call alone, on the values it was given.

A training step that puts a uniform prior on a heading, `-vonmises.logpdf(mu, 0.0).mean()`, under
`jit` and `value_and_grad`, fails its check `assert jnp.isfinite(loss)` because `logpdf` makes a NaN
at kappa 0. The traced level finds the operation that makes it, but what it writes back is that
operation, not the call the value is made inside, and deleting statements cannot take the call out
of the model, the optimizer and the loop around it. The program runs once more with each call of that
function watched (`call_probe`), and the proposal is the call alone, on what the first call whose
result held the value was given, under a check of its own kind:

    from jax.scipy.stats import vonmises
    import jax.numpy as jnp
    mu = 0.7165
    assert jnp.isfinite(vonmises.logpdf(mu, 0.0))

first at the element of the result that held the value (each array argument of the result's shape
at that element), then on the whole arrays when they are small. The callee is spelled as the program
spells it, with the imports and definitions it reads (`program_slice`); an argument the program
writes as a constant stays as written, and a number it computes is written as that number.
"""
from __future__ import annotations

import ast
import math
import re
from typing import Callable, Iterator

from oracles import kinds, nonfinite
from oracles.outcome import RunResult, Signature
from reducer.faults.nonfinite import first_of
from reducer.levels.source.starts.call_probe import MARK
from reducer.levels.source.starts.check_alone import MAX_WHOLE, at_points, module_alias, written_number, written_whole
from reducer.levels.source.starts.check_probe import reported
from reducer.levels.source.starts.program_slice import binds, outer_names, scope_of, slice_for

PRELUDE = "import reducer.levels.source.starts.call_probe as _call_probe"
PROBE = "_call_probe"
#: the values a signature names that the probe watches for (not several kinds at once: `nan,+inf`)
KINDS = ("nan", "inf", "+inf", "-inf")
MAX_SITES = 3  # calls whose values are written out, in the order the run reported them


def calls_of(tree: ast.Module, name: str) -> list[ast.Call]:
    """The calls of a function by its last name (`vonmises.logpdf(…)` for `logpdf`), in program
    order; none given starred arguments."""
    found = [c for c in ast.walk(tree) if isinstance(c, ast.Call)
             and (c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", None)) == name
             and not any(isinstance(a, ast.Starred) for a in c.args) and all(k.arg for k in c.keywords)]
    return sorted(found, key=lambda c: (c.lineno, c.col_offset))


class _Watched(ast.NodeTransformer):
    """Each call of `sites` written as `_call_probe.seen(SITE, callee, *its arguments)`."""

    def __init__(self, sites: list[ast.Call]):
        self.sites = {id(c): k for k, c in enumerate(sites)}

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        site = self.sites.get(id(node))
        if site is None:
            return node
        seen = ast.Attribute(ast.Name(PROBE, ast.Load()), "seen", ast.Load())
        return ast.Call(seen, [ast.Constant(site), node.func, *node.args], node.keywords)


def watched(program: str, name: str, kind: str) -> str | None:
    """`program` with every call of `name` watched (the sites numbered as `calls_of` orders them),
    the probe's report of values of `kind` on; None where it makes none."""
    tree = ast.parse(program)
    sites = calls_of(tree, name)
    if not sites:
        return None
    text = ast.unparse(ast.fix_missing_locations(_Watched(sites).visit(tree)))
    return first_of(text, f"{PRELUDE}; {PROBE}.install({kind!r})")


def reports(output: str) -> list[dict]:
    """What the probe reported, one line per site, in the order the run reported them."""
    return reported(output, MARK)


def _statement(tree: ast.Module, call: ast.Call) -> ast.stmt | None:
    """The innermost simple statement that holds `call`."""
    held = [s for s in ast.walk(tree) if isinstance(s, ast.stmt) and not hasattr(s, "body")
            and any(n is call for n in ast.walk(s))]
    return held[-1] if held else None


def compose(tree: ast.Module, call: ast.Call, found: dict, module: str = "jnp", wanted: str = "nan") -> Iterator[str]:
    """The call of `call`'s site alone on the values `found` says it was given: at the element of its
    result that held the value, then whole (`module`: how the program names `jax.numpy`); negated
    where the value the program's check read (`wanted`: `+inf`) is of the other sign."""
    stmt = _statement(tree, call)
    scope = scope_of(tree, stmt) if stmt is not None else None
    given = found.get("arguments", [])
    nodes = [*call.args, *(kw.value for kw in call.keywords)]
    if scope is None or len(given) != len(nodes) or None in given:
        return
    part = slice_for(outer_names(call.func), scope)
    if part.unbound:
        return
    head = [ast.unparse(s) for s in part.module + part.local]
    taken = set().union(*(binds(s) for s in part.module + part.local), outer_names(call.func))
    shape, at, made = found.get("shape", []), found.get("at", 0), set()
    for whole in (False, True):
        texts = [_argument(node, value, shape, at, whole, module) for node, value in zip(nodes, given)]
        if None in texts:
            continue
        lines, spelled = [], []
        for k, (node, value, text) in enumerate(zip(nodes, given, texts)):
            if isinstance(node, ast.Constant) or "number" in value:
                spelled.append(text)
                continue
            name = node.id if isinstance(node, ast.Name) and node.id not in taken else f"arg{k}"
            lines.append(f"{name} = {text}")
            spelled.append(name)
        keywords = [f"{kw.arg}={text}" for kw, text in zip(call.keywords, spelled[len(call.args):])]
        value = f"{ast.unparse(call.func)}({', '.join(spelled[:len(call.args)] + keywords)})"
        if wanted.startswith(("+", "-")) and found.get("value") not in (None, wanted.replace("+", "")):
            value = f"-{value}"  # the program's check reads it negated (a loss of a log-likelihood)
        if not all(_finite(v) for v in given):  # the check reads what its line reads: the call's result alone
            name = next((n for n in ("value", "result", "out") if n not in taken and not any(
                line.startswith(f"{n} = ") for line in lines)), "_value")
            lines.append(f"{name} = {value}")
            value = name
        check = f"assert {module}.isfinite({value})" + (".all()" if whole and shape else "")
        imports = [f"import {name} as {alias}" for name, alias in (("jax.numpy", module), ("numpy", "np"))
                   if alias not in taken and re.search(rf"\b{alias}\.", "\n".join(lines + [check]))]
        proposal = "\n".join(imports + head + lines + [check]) + "\n"
        if proposal not in made:
            made.add(proposal)
            yield proposal
        if not shape:  # a number: whole, it is the same
            return


def _finite(value: dict) -> bool:
    """Whether an argument the probe wrote (a number, or an array's values) holds no NaN or Inf."""
    numbers = [value["number"]] if "number" in value else value.get("values", [])
    return all(not isinstance(x, float) or math.isfinite(x) for x in numbers)


def _argument(node: ast.expr, value: dict, shape: list, at: int, whole: bool, module: str) -> str | None:
    """How one argument is written: as the program wrote a constant, a number as that number, an
    array of the result's shape at the result's element (unless `whole`), any other array whole
    (None when it is too large)."""
    if isinstance(node, ast.Constant):
        return ast.unparse(node)
    if "number" in value:
        return written_number(value["number"])
    spelling = module if value.get("jax") else "np"
    if not whole and value["shape"] == shape:
        return at_points(value, len(shape), [at], spelling)[0]
    return written_whole(value, spelling) if len(value["values"]) <= MAX_WHOLE else None


class CallAlone:
    """Start from the library call the non-finite value is made inside, alone on what it was given."""

    name = "call-alone"

    def __init__(self):
        self.called, self.kind = "", "nan"

    def applies(self, signature: Signature) -> bool:
        self.called, self.kind = signature.get("from") or "", signature.get("value") or "nan"
        return (kinds.on_nonfinite(signature) and signature.get("in") == "forward"
                and signature.get("type") == "AssertionError" and nonfinite.inside_call(signature)
                and self.called.isidentifier() and self.kind in KINDS)

    def proposals(self, program: str, run: Callable[[str], RunResult]) -> Iterator[str]:
        try:
            text, tree = watched(program, self.called, self.kind.lstrip("+-")), ast.parse(program)
        except (SyntaxError, ValueError):
            return
        if text is None:
            return
        sites = calls_of(tree, self.called)
        for found in reports(run(text).output)[:MAX_SITES]:
            site = found.get("site")
            if isinstance(site, int) and 0 <= site < len(sites):
                yield from compose(tree, sites[site], found, module_alias(tree, "jax.numpy") or "jnp", self.kind)

