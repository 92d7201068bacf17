"""Implicit layer: the output solves tanh(w * y) = y - x, found by a damped fixed-point iteration
that runs until convergence. Training differentiates straight through the solver."""
import jax
import jax.numpy as jnp


def solve(w, x, tol=1e-5):
    def cond(state):
        y, prev = state
        return jnp.max(jnp.abs(y - prev)) > tol

    def body(state):
        y, _ = state
        return 0.5 * y + 0.5 * (x + jnp.tanh(w * y)), y

    y, _ = jax.lax.while_loop(cond, body, (x, x + 1.0))
    return y


def loss(w, xs, ys):
    return jnp.mean((solve(w, xs) - ys) ** 2)


def main():
    xs = jnp.linspace(-1.0, 1.0, 5)
    ys = xs + 0.3
    w = 0.5
    for i in range(3):
        w = w - 0.1 * jax.grad(loss)(w, xs, ys)
        print("step", i, w)


if __name__ == "__main__":
    main()
