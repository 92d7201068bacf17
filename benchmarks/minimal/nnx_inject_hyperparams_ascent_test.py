import jax
import optax
f = lambda p: p * p
opt = optax.sgd(-0.05)
u, _ = opt.update(jax.grad(f)(1.0), opt.init(1.0))
assert f(1.0 + u) < f(1.0), f"loss did not decrease: {f(1.0):.3f} -> {f(1.0 + u):.3f}"
