"""The fixes of a non-finite value (`reducer.faults.safe_ops`) and the kind of value a failing check
read (`reducer.faults.checked_value`), in this process: each fix is undone after its test."""
import sys

import jax
import jax.numpy as jnp
import pytest

from oracles import nonfinite as nonfinite_kinds
from reducer.faults import checked_value, safe_ops


def where_log_grad():
    return jax.grad(lambda p: jnp.where(p > 0, p * jnp.log(p), 0.0))(0.0)


def log_softmax_by_hand():
    return jnp.log(jax.nn.softmax(jnp.array([0.0, 200.0])))


@pytest.fixture
def fix():
    undo = []

    def made_safe(op, how, outside=""):
        undo.append(safe_ops.make_safe(op, how, outside))
        jax.clear_caches()  # functions traced before the fix would not see it

    yield made_safe
    for u in undo:
        u()
    jax.clear_caches()


def test_the_inner_where_takes_a_masked_gradient_nan_away_and_the_forward_fix_alone_does_not(fix):
    assert jnp.isnan(where_log_grad())
    fix("log", safe_ops.FORWARD)
    assert jnp.isnan(where_log_grad())
    fix("log", safe_ops.DERIVATIVE)
    assert where_log_grad() == 0.0


def test_a_fix_reaches_the_operation_inside_a_library_call_under_jit(fix):
    norm_grad = jax.jit(jax.grad(lambda x: jnp.linalg.norm(x) ** 2))
    assert jnp.isnan(norm_grad(jnp.zeros(2))).all()
    fix("norm", safe_ops.DERIVATIVE)
    assert jnp.isfinite(norm_grad(jnp.zeros(2))).all()


def test_a_fix_left_out_of_a_public_call_acts_on_the_programs_own_operations_alone(fix):
    """`outside="norm"`: `sqrt` made safe where the program binds it, not inside JAX's `norm` (a function
    of the program's of that name is the program's own)."""
    def norm(x):  # the program's own, of the same name
        return jnp.sqrt(jnp.sum(x ** 2))

    fix("sqrt", safe_ops.DERIVATIVE, outside="norm")  # before the program reads `jnp.linalg.norm`, as a prologue
    own, jaxs = jax.grad(norm), jax.grad(jnp.linalg.norm)
    assert jnp.isfinite(own(jnp.zeros(2))).all()  # `jnp.sqrt`'s trace, made here, is not reused inside `norm`
    assert jnp.isnan(jaxs(jnp.zeros(2))).all()
    fix("sqrt", safe_ops.DERIVATIVE)
    assert jnp.isfinite(jaxs(jnp.zeros(2))).all()


def test_a_call_given_the_programs_own_function_is_not_left_out(fix):
    """`lax.scan(step, …)` runs the program's own `step`: a fix left out of `scan` still acts there."""
    def total(x):
        return jax.lax.scan(lambda c, v: (c + jnp.sqrt(v), None), 0.0, x)[0]

    fix("sqrt", safe_ops.DERIVATIVE, outside="scan")
    assert jnp.isfinite(jax.grad(total)(jnp.zeros(2))).all()


def test_an_underflow_fix_names_what_made_the_zero_that_log_turned_into_minus_inf(fix):
    assert jnp.isneginf(log_softmax_by_hand()[0])
    fix("mul", safe_ops.UNDERFLOW)
    assert jnp.isneginf(log_softmax_by_hand()[0])  # not the operation that underflowed
    fix("exp", safe_ops.UNDERFLOW)
    assert jnp.isfinite(log_softmax_by_hand()).all()
    assert not jnp.isfinite(jnp.log(0.0))  # a zero nothing underflowed to stays a zero


def test_a_product_of_many_factors_that_underflowed_is_fixed_where_no_factor_is_zero(fix):
    """A likelihood's probabilities multiplied together (`jnp.prod`; a forward recursion's matrix
    product, step by step under `scan`) round to an exact 0 that `log` makes `-inf`: the product's
    fix keeps it above underflow, a factor that is 0 keeps it 0."""
    def loglik(p):
        return jnp.log(jnp.prod(jnp.full(99, p)))

    def recursion(a):
        out, _ = jax.lax.scan(lambda a, _: (a @ jnp.full((2, 2), 0.15), None), a, None, length=120)
        return jnp.log(out.sum())

    assert jnp.isneginf(loglik(0.3)) and jnp.isneginf(recursion(jnp.ones(2)))
    fix("mul", safe_ops.UNDERFLOW)
    assert jnp.isneginf(loglik(0.3)) and jnp.isneginf(recursion(jnp.ones(2)))  # not where the 0 is made
    fix("reduce_prod", safe_ops.UNDERFLOW)
    fix("dot_general", safe_ops.UNDERFLOW)
    assert jnp.isfinite(loglik(0.3)) and jnp.isfinite(jax.jit(recursion)(jnp.ones(2)))
    assert jnp.isneginf(jnp.log(jnp.prod(jnp.array([0.3, 0.0]))))  # a factor that is 0
    assert jnp.isneginf(jnp.log((jnp.zeros(2) @ jnp.ones((2, 2))).sum()))


def test_the_value_alone_keeps_what_the_operation_made_forward_and_takes_its_derivative_away(fix):
    value, grad = jax.value_and_grad(jnp.log)(0.0)
    assert jnp.isneginf(value) and jnp.isposinf(grad)
    fix("log", safe_ops.VALUE_ONLY)
    value, grad = jax.value_and_grad(jnp.log)(0.0)
    assert jnp.isneginf(value) and grad == 0.0  # no NaN from the masked derivative either
    assert jax.grad(jnp.log)(2.0) == 0.5  # where the value is finite, nothing changes


def test_undo_gives_the_primitive_back():
    undo = safe_ops.make_safe("log", safe_ops.DERIVATIVE)
    undo()
    jax.clear_caches()
    assert jnp.isnan(where_log_grad())


def test_names_a_program_uses_stand_for_primitives():
    assert safe_ops.primitives("arccos") == ("acos",) and safe_ops.known("norm") and not safe_ops.known("nosuch")


def _seen_at_the_check(check) -> tuple[str, int]:
    try:
        check()
    except AssertionError:
        kinds, count, _ = checked_value._seen(sys.exc_info()[2])
        return checked_value.named(kinds), count
    raise AssertionError("the check did not fail")


def _kind_at_the_check(check) -> str:
    return _seen_at_the_check(check)[0]


def test_the_kind_is_the_checked_values_not_the_first_non_finite_value_made():
    def loss_check():
        loss, grads = jax.value_and_grad(lambda w: -jnp.log(jax.nn.softmax(jnp.array([0.0, 200.0]) * w)[0]))(1.0)
        assert jnp.isfinite(loss)  # the gradient is NaN; the check reads the loss

    def grads_check():
        grads = {"w": jnp.array([1.0, jnp.nan]), "b": jnp.array(jnp.inf)}
        assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads))

    def inline_check():
        assert jnp.isfinite(jax.grad(jax.lax.sqrt)(0.0))

    assert _kind_at_the_check(loss_check) == "+inf"
    assert _kind_at_the_check(grads_check) == "+inf,nan"
    assert _kind_at_the_check(inline_check) == "+inf"


def test_the_check_tells_how_many_values_it_read_were_not_finite_even_through_a_generator():
    def value_and_grad_check():  # the forward value is NaN beside the gradient's: two values
        assert all(jnp.isfinite(x) for x in jax.value_and_grad(lambda a: a * jnp.log(a))(0.0))

    def grad_only_check():  # the `where` trap: the forward value is finite
        assert all(jnp.isfinite(x) for x in jax.value_and_grad(lambda a: jnp.where(a > 0, a * jnp.log(a), 0.0))(0.0))

    def grads_check():
        grads = {"w": jnp.array([1.0, jnp.nan, jnp.nan]), "b": jnp.array(jnp.inf)}
        assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads))

    assert _seen_at_the_check(value_and_grad_check) == ("nan", 2)
    assert _seen_at_the_check(grad_only_check) == ("nan", 1)
    assert _seen_at_the_check(grads_check) == ("+inf,nan", 3)
    assert checked_value.count_in(f"{checked_value.LINE_START} nan 2\nTraceback") == 2
    assert checked_value.count_in(f"{checked_value.LINE_START} nan\nTraceback") is None


def test_a_candidate_covers_the_kinds_the_original_showed():
    assert nonfinite_kinds.covers("+inf,nan", "+inf") and nonfinite_kinds.covers("-inf", "inf")
    assert not nonfinite_kinds.covers("+inf", "nan") and not nonfinite_kinds.covers("", "nan")
    assert checked_value.kind_in(f"x\n{checked_value.LINE_START} -inf\nTraceback") == "-inf"


def test_an_underflow_fix_survives_the_division_after_it(fix):
    """A softmax over logits hundreds apart: the `exp` of the trailing one underflows, and the division
    by a sum above 1 that follows must not round the fixed value to 0 again (XLA flushes subnormals)."""
    loss = jax.jit(lambda logits: -jnp.log(jax.nn.softmax(logits)[0]))
    logits = jnp.array([0.0, 1000.0, 1000.0])
    assert jnp.isposinf(loss(logits))
    fix("exp", safe_ops.UNDERFLOW)
    assert jnp.isfinite(loss(logits))



def test_a_division_broadcast_by_the_operation_itself_is_fixed_and_the_rules_divisions_are_left_alone(fix):
    def unit_rows(z):
        return z / jax.vmap(jnp.linalg.norm)(z)[:, None]  # `div` of (2, 3) by (2, 1)

    loss = jax.value_and_grad(lambda z: jnp.sum(unit_rows(z) * jnp.arange(3.0)))
    before = loss(jnp.array([[3.0, 4.0, 0.0], [1.0, 1.0, 1.0]]))[1]
    assert jnp.isnan(unit_rows(jnp.zeros((2, 3)))).all()
    fix("div", safe_ops.DERIVATIVE)
    assert (unit_rows(jnp.zeros((2, 3))) == 0).all()
    # `sqrt`'s and `div`'s own derivative rules divide a tangent: left as JAX wrote them, the gradient
    # away from the origin is unchanged (and the transpose of a `select` on a tangent never built)
    after = loss(jnp.array([[3.0, 4.0, 0.0], [1.0, 1.0, 1.0]]))[1]
    assert jnp.allclose(before, after, atol=1e-6) and jnp.abs(before).max() > 0.1
    # a negative `integer_pow` (the derivative of `div`) is lowered through a `div`: not fixed there
    assert jnp.isfinite(jax.jit(jax.grad(lambda x: 1.0 / x))(2.0))


@pytest.mark.parametrize("point, fixed", [("edge", ("norm",)), ("pole", ("log at 0", "0 / 0", "1 / 0")),
                                          ("outside", ("sqrt of -1", "log of -1"))])
def test_a_fix_kept_to_one_class_of_point_acts_there_alone(fix, point, fixed):
    """The edge of a domain (`sqrt(0)`: finite, its derivative not), a pole (`log(0)`; a division by 0,
    its NaN of `0 / 0` too) and the outside of a domain (`sqrt(-1)`: NaN) are each fixed by the fix
    kept to their class, and by no other."""
    ratio = lambda n: jax.grad(lambda d: jnp.where(d > 0, n / d, 0.0))(0.0)  # noqa: E731
    gradients = {"norm": lambda: jax.grad(lambda x: jnp.linalg.norm(x) ** 2)(jnp.zeros(1))[0],
                 "sqrt of -1": lambda: jax.grad(jnp.sqrt)(-1.0),
                 "log at 0": where_log_grad,
                 "log of -1": lambda: jax.grad(lambda p: jnp.where(p > 0, p * jnp.log(p), 0.0))(-1.0),
                 "0 / 0": lambda: ratio(0.0), "1 / 0": lambda: ratio(1.0)}
    for op in ("sqrt", "log", "div"):
        fix(op, f"{safe_ops.DERIVATIVE}@{point}")
    finite = {name for name, g in gradients.items() if jnp.isfinite(g())}
    assert finite == set(fixed)


def test_a_class_of_point_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="no class of point"):
        safe_ops.make_safe("sqrt", "derivative@inside")


def test_an_operations_own_overflow_of_float32_comes_back_alone_in_a_float64_program():
    """Its values beyond float32's range are infinite, the rest float64: an operation after it is not
    made to overflow by it (`square(exp(50.0))` is finite), even where its inputs stay float32."""
    with jax.enable_x64(True):
        undo = safe_ops.make_safe("exp", safe_ops.NARROW)
        jax.clear_caches()
        try:
            softplus = jnp.log(1 + jnp.exp(jnp.array([1.0, 100.0])))
            assert softplus.dtype == jnp.float64 and jnp.isinf(softplus[1]) and jnp.isclose(softplus[0], 1.3132616875)
            assert jnp.isfinite(jnp.square(jnp.array(1e20)))  # another operation stays float64
            after = jax.jit(lambda z: jnp.square(jnp.exp(z)))(jnp.array([50.0, 146.0], jnp.float32))
            assert after.dtype == jnp.float64 and jnp.isfinite(after[0]) and jnp.isinf(after[1])
        finally:
            undo()
            jax.clear_caches()


def test_an_overflow_of_float32_brought_back_but_in_a_call_leaves_the_call_in_float64_on_float32_inputs():
    """`poch(20, 16)` is 35!/19! = 8.5e22, but JAX computes it as `gamma(36) / gamma(20)`, whose `exp` overflows
    float32: with `exp`'s overflow brought back everywhere but inside `poch`, the call on the program's
    float32 inputs evaluates it in float64 (left as it is, float32 would overflow there too), and the
    program's own `exp` still overflows."""
    import jax.scipy.special as special

    r, y = jnp.float32(20.0), jnp.float32(16.0)
    assert jnp.isinf(special.poch(r, y))
    with jax.enable_x64(True):
        undo = safe_ops.make_safe("exp", safe_ops.NARROW, outside="poch")
        jax.clear_caches()
        try:
            assert jnp.isclose(special.poch(r, y), 8.4945e22, rtol=1e-3)  # 35! / 19!
            assert jnp.isinf(jnp.exp(jnp.float64(100.0)))
        finally:
            undo()
            jax.clear_caches()


def test_an_operation_widened_to_float64_holds_its_value_where_its_inputs_stay_float32():
    """A Flax layer's float32 parameters stay float32 in a float64 program: the operation evaluated in
    float64 on them keeps its result float64, so that what the program computes from it does too."""
    with jax.enable_x64(True):
        undo = safe_ops.make_safe("exp", safe_ops.WIDEN)
        jax.clear_caches()
        try:
            z = jnp.array([1.0, 100.0], jnp.float32)
            softplus = jax.jit(lambda z: jnp.log(1 + jnp.exp(z)))(z)
            assert softplus.dtype == jnp.float64 and jnp.allclose(softplus, jnp.array([1.3132616875, 100.0]))
            assert jnp.isinf(jnp.square(jnp.array(1e20, jnp.float32)))  # another operation stays float32
            grad = jax.grad(lambda z: jnp.sum(jnp.exp(z)))(z)
            assert grad.dtype == jnp.float32 and jnp.isinf(grad[1])  # the cotangent is the input's type

        finally:
            undo()
            jax.clear_caches()


def test_a_sum_evaluated_in_float64_keeps_its_value_through_the_cast_jnp_ends_with():
    """`jnp.sum` of float32 values casts its sum back to float32: with the cast evaluated in float64 too,
    a one-pass variance of float32 readings at a large offset keeps its sign; each operation evaluated
    so is said by name when the process exits (`say_widened`)."""
    import numpy as np

    x = jnp.asarray(np.float32(4096.1) + np.float32(1e-3) * np.sin(np.arange(64, dtype=np.float32)))
    assert jnp.mean(x ** 2) - jnp.mean(x) ** 2 < 0  # float32 rounding
    with jax.enable_x64(True):
        undo = [safe_ops.make_safe(o, safe_ops.WIDEN) for o in ("integer_pow", "reduce_sum", safe_ops.CAST, "div")]
        jax.clear_caches()
        try:
            variance = jnp.mean(x ** 2) - jnp.mean(x) ** 2
            assert variance.dtype == jnp.float64 and 0 < variance < 1e-6
            assert jnp.asarray(np.float64(1.5)).astype(jnp.float32).dtype == jnp.float64  # a float64 value stays
            assert x.astype(jnp.float16).dtype == jnp.float16  # a float32 value is cast as before
        finally:
            for u in undo:
                u()
            jax.clear_caches()
    assert {"integer_pow", "reduce_sum", safe_ops.CAST, "div"} <= safe_ops._widened
    assert safe_ops.widened_in("loss nan\nreducer-widened: div integer_pow\n") == {"div", "integer_pow"}
    assert safe_ops.widened_in("loss nan\n") is None
