import jax
import optax
f = lambda p: p * p
opt = optax.scale_by_schedule(lambda n: 0.1)
u, _ = opt.update(jax.grad(f)(1.0), opt.init(1.0))
assert f(1.0 + u) < f(1.0), f"loss did not fall: {f(1.0)} -> {f(1.0 + u)}"
