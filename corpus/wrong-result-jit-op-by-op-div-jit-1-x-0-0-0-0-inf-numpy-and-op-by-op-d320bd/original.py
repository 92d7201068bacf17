import jax, jax.numpy as jnp, numpy as np
# IEEE 754 (round-to-nearest): (-0.0) + (+0.0) == +0.0, so 1/(x + 0.0) is +inf for x = -0.0.
f = lambda x: 1.0 / (x + 0.0)
x = jnp.float32(-0.0)
ref = np.float32(1.0) / (np.float32(-0.0) + np.float32(0.0))   # numpy: +inf
with jax.disable_jit():
    eager = f(x)                                                  # op by op: +inf
jitted = jax.jit(f)(x)                                            # XLA folds x + 0 -> x: -inf
print('numpy', ref, 'op-by-op', eager, 'jit', jitted)
assert jitted == ref, f"jit(1/(x+0.0))(-0.0) = {jitted}, numpy and op-by-op give {ref}"
