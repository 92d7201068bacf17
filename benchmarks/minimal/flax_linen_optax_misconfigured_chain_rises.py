import jax
import optax
f = lambda p: p * p
opt = optax.scale_by_learning_rate(-0.1)
u, _ = opt.update(jax.grad(f)(1.0), opt.init(1.0))
assert f(1.0 + u) < f(1.0), f"training made things worse: mse {f(1.0):.4f} -> {f(1.0 + u):.4f}"
