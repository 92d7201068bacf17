"""Calls of the program's own functions taken into a check's statements
(`reducer.levels.source.starts.call_inline`): the callee's formula kept, what it read of the caller's
unwritable names replaced by the arrays it held at its return, and names kept apart."""
import ast

from reducer.levels.source.starts.call_inline import take_in_calls
from reducer.levels.source.starts.program_slice import outer_names, scope_of, slice_for


def _array(values):
    return {"dtype": "float32", "shape": [len(values)], "jax": True, "values": values}


def _taken(program: str, line: int, found: dict):
    tree = ast.parse(program)
    stmt = next(s for s in ast.walk(tree) if isinstance(s, ast.stmt) and s.lineno == line)
    scope = scope_of(tree, stmt)
    part = slice_for(outer_names(stmt), scope, frozenset(found["arrays"]))
    arrays, changed = take_in_calls(tree, part.local + [stmt], part.unbound, scope, found)
    return ast.unparse(tree), arrays, changed


HELPER = """import jax.numpy as jnp
def loss(model, x, scale=2.0):
    z = model(x)
    s = jnp.exp(z) * scale
    return jnp.log(s)
def check(model, x):
    got = loss(model, x)
    assert jnp.isfinite(got).all()
"""


def test_the_callee_formula_is_kept_and_what_the_model_made_is_fed():
    found = {"arrays": {"x": _array([1.0])}, "returned": {"loss": {"z": _array([-200.0]), "s": _array([0.0])}}}
    text, arrays, changed = _taken(HELPER, 7, found)
    assert changed and arrays["z"] == _array([-200.0]) and "s" not in arrays  # `s` is computed, not fed
    body = text.split("def check(model, x):\n")[1]
    assert body.splitlines() == ["    scale = 2.0", "    s = jnp.exp(z) * scale", "    got = jnp.log(s)",
                                 "    assert jnp.isfinite(got).all()"]


def test_a_name_the_caller_holds_otherwise_is_renamed():
    program = HELPER.replace("    got = loss(model, x)", "    s = x + 1.0\n    got = loss(model, x) + s")
    found = {"arrays": {"x": _array([1.0]), "s": _array([2.0])}, "returned": {"loss": {"z": _array([-200.0])}}}
    text, _, changed = _taken(program, 8, found)
    assert changed and "loss_s = jnp.exp(z) * scale" in text and "got = jnp.log(loss_s) + s" in text


def test_what_cannot_be_taken_in_is_left_as_it_is():
    found = {"arrays": {"x": _array([1.0])}, "returned": {"loss": {"z": _array([-200.0])}}}
    looped = HELPER.replace("    s = jnp.exp(z) * scale\n", "    for _ in range(2):\n        z = z * 2\n    s = jnp.exp(z)\n")
    twice = HELPER.replace("got = loss(model, x)", "got = loss(model, x) - loss(model, -x)")
    unseen = {"arrays": found["arrays"], "returned": {"loss": {"w": _array([0.0])}}}  # neither `z` nor `s` seen
    for program, given in ((looped, found), (twice, found), (HELPER, unseen)):
        text, arrays, changed = _taken(program, 10 if program is looped else 7, given)
        assert not changed and text == ast.unparse(ast.parse(program)) and arrays == given["arrays"]
