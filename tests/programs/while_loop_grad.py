"""JAX cannot reverse-differentiate a while_loop."""
import jax


def newton_sqrt(a):
    return jax.lax.while_loop(lambda x: abs(x * x - a) > 1e-3, lambda x: 0.5 * (x + a / x), a)


print(jax.grad(newton_sqrt)(2.0))
