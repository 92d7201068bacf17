"""The activity-mismatch oracle on the messages JAX itself raises (jax 0.10.2, in process): each
custom-rule and tangent complaint gets its own kind, and errors of other kinds get none."""
import traceback

import pytest

from oracles.activity_mismatch import ActivityMismatch
from oracles.outcome import RunResult


def _custom_vjp_wrong_arity():
    import jax

    @jax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))
    jax.grad(f)(1.0, 2.0)


def _custom_vjp_fwd_not_a_pair():
    import jax

    @jax.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: x * 2.0, lambda res, g: (g,))
    jax.grad(f)(1.0)


def _custom_jvp_wrong_tangent_dtype():
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def f(x):
        return x * 2.0

    f.defjvp(lambda primals, tangents: (f(primals[0]), jnp.zeros(3)))
    jax.jvp(f, (1.0,), (1.0,))


def _jvp_structure():
    import jax

    jax.jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,))


def _jvp_dtype():
    import jax

    jax.jvp(lambda x: x * 2.0, (1.0,), (1,))


def _integer_input():
    import jax

    jax.grad(lambda x: x * 2)(1)


def _not_a_mismatch():
    import jax.numpy as jnp

    jnp.ones(3) @ jnp.ones(4)


def _output_of(program) -> RunResult:
    try:
        program()
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        return RunResult(1, "", text, 1.0)
    raise AssertionError(f"{program.__name__} raised nothing")


@pytest.mark.parametrize("program, kind", [
    (_custom_vjp_wrong_arity, "custom_vjp-structure"),
    (_custom_vjp_fwd_not_a_pair, "custom_vjp-fwd-output"),
    (_custom_jvp_wrong_tangent_dtype, "custom_jvp-shape-dtype"),
    (_jvp_structure, "jvp-structure"),
    (_jvp_dtype, "jvp-dtype"),
    (_integer_input, "integer-input"),
])
def test_each_message_jax_raises_names_its_kind(program, kind):
    sig = ActivityMismatch().classify(_output_of(program))
    assert (sig.get("source"), sig.get("kind")) == ("jax", kind)
    assert sig.title == f"JAX: {kind.replace('-', ' ')}"


def test_an_error_of_another_kind_is_not_a_mismatch():
    assert ActivityMismatch().classify(_output_of(_not_a_mismatch)) is None


def test_enzyme_messages_name_enzyme():
    text = "error: Mismatched activity for: ret float %5, const val: %5 = fmul float %3, %4\n"
    sig = ActivityMismatch().classify(RunResult(1, "", text, 1.0))
    assert (sig.get("source"), sig.get("kind"), sig.title) == ("enzyme", "mismatched-activity",
                                                               "Enzyme-JAX: mismatched activity")
