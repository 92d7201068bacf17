"""The written-back script's tidying (`reducer.levels.jaxpr.tidy`): values used once written where
they are used, float32 scalar fills as literals, and what must stay named."""
from reducer.levels.jaxpr.tidy import tidy


def lines(text):
    return [line for line in text.strip().splitlines()]


def test_values_used_once_are_written_where_they_are_used_and_float32_fills_become_literals():
    src = ("def f(a):\n    b = jnp.ones((), jnp.float32)\n    c = a == 0.0\n    d = jnp.where(c, b, a)\n"
           "    e = 1.0 / d\n    return jnp.where(c, jnp.zeros((), jnp.float32), e)\n")
    assert lines(tidy(src)) == ["def f(a):", "    c = a == 0.0",
                                "    return jnp.where(c, 0.0, 1.0 / jnp.where(c, 1.0, a))"]


def test_a_value_read_twice_or_in_a_loop_body_stays_named():
    src = ("def f(a):\n    w = jnp.sin(a)\n    body = lambda i, x: x * w\n    y = lax.fori_loop(0, 3, body, a)\n"
           "    return y + y\n")
    out = tidy(src)
    assert "w = jnp.sin(a)" in out and "y = lax.fori_loop" in out
    assert "lax.fori_loop(0, 3, lambda i, x: x * w, a)" in out  # the lambda, read once at this level, moves


def test_a_value_that_calls_back_into_python_keeps_its_place():
    src = "def f(a):\n    b = jax.pure_callback(g, a, a)\n    c = jnp.cos(a)\n    return b + c\n"
    out = tidy(src)
    assert "b = jax.pure_callback(g, a, a)" in out and "return b + jnp.cos(a)" in out


def test_other_dtypes_and_shapes_keep_their_fills_and_widened_scripts_keep_every_fill():
    src = "def f(a):\n    b = jnp.ones((2,), jnp.float32)\n    c = jnp.ones((), jnp.int32)\n    return a * b * c\n"
    assert "jnp.ones((2,), jnp.float32) * jnp.ones((), jnp.int32)" in tidy(src)
    widened = "def f(a):\n    b = jnp.ones((), jnp.float32)\n    return a * b\n"
    assert "jnp.ones((), jnp.float32)" in tidy(widened, literals=False)


def test_a_name_bound_again_and_text_that_does_not_parse_are_left_alone():
    src = "x = jnp.ones(3)\nx = x + 1\nprint(x)\n"
    assert lines(tidy(src)) == ["x = jnp.ones(3)", "print(x + 1)"]
    src = "def f(a):\n    b = a + 1\n    b = b * 2\n    return b + b\n"
    assert tidy(src) == src
    assert tidy("def f(:\n") == "def f(:\n"


def test_fills_stay_arrays_where_python_would_do_the_arithmetic():
    src = ("def f(a):\n    z = jnp.zeros((), jnp.float32)\n    w = jnp.zeros((), jnp.float32)\n    return z / w + a\n"
           "b = jnp.ones((), jnp.float32)\nprint(f(b))\n")
    out = tidy(src)
    assert "jnp.zeros((), jnp.float32) / jnp.zeros((), jnp.float32)" in out  # 0.0 / 0.0 raises in Python
    assert "print(f(jnp.ones((), jnp.float32)))" in out  # the program's inputs stay arrays
