"""A public call of JAX's computed right (`reducer.faults.call_fix`) and found by its name
(`reducer.faults.within_call`), in this process: each replacement is undone after its test."""
import jax
import jax.numpy as jnp
import jax.scipy.special as special
import pytest

from reducer.faults import call_fix, within_call


@pytest.fixture
def undo():
    done = []
    yield done.append
    for u in done:
        u()
    jax.clear_caches()


def test_a_call_in_float64_gives_back_its_value_in_float32_where_float32_holds_it(undo):
    """`bessel_jn`'s float32 NaN is its recurrence's overflow: in float64 the value is J_v, given back
    in float32; `gamma(40.0)` is 2e46 in float64, which float32 does not hold: inf, as float32 makes it."""
    assert jnp.isnan(special.bessel_jn(jnp.ones(2), v=1)).all()
    undo(call_fix.in_float64("bessel_jn"))
    undo(call_fix.in_float64("gamma"))
    values = special.bessel_jn(jnp.ones(2), v=1)
    assert values.dtype == jnp.float32 and jnp.allclose(values[:, 0], jnp.array([0.7651977, 0.4400506]))
    assert jnp.allclose(jax.jit(lambda z: special.bessel_jn(z, v=1))(jnp.ones(2)), values)
    assert jnp.isfinite(jax.grad(lambda z: special.bessel_jn(z, v=1)[1].sum())(jnp.ones(2))).all()
    big = special.gamma(jnp.array([3.0, 40.0]))
    assert big.dtype == jnp.float32 and big[0] == 2.0 and jnp.isposinf(big[1])
    assert jnp.ones(2).dtype == jnp.float32  # the rest of the program stays as it was


def test_a_replaced_call_keeps_its_other_attributes_and_is_given_back():
    before = jnp.add
    done = within_call.scoped("add")
    try:
        assert jnp.add is not before and jnp.add.reduce(jnp.ones(3)) == 3.0 and jnp.add(1.0, 2.0) == 3.0
    finally:
        done()
    assert jnp.add is before


def test_the_flag_is_set_inside_the_call_alone_and_not_where_it_is_given_the_programs_function(undo):
    seen = []

    def step(carry, x):
        seen.append(("step", within_call.inside()))
        return carry + x, None

    class Reading:  # JAX's `asarray` reads it inside the call
        def __jax_array__(self):
            seen.append(("asarray", within_call.inside()))
            return jnp.ones(2)

    undo(within_call.scoped("scan"))
    undo(within_call.scoped("asarray"))
    jax.lax.scan(step, 0.0, jnp.ones(2))
    jnp.asarray(Reading())
    assert seen == [("step", False), ("asarray", True)] and not within_call.inside()
