import jax, jax.numpy as jnp, numpy as np
# IEEE 754: every ordered comparison with NaN is False, so abs(nan) >= 0, exp(nan) >= 0, nan*nan >= 0 are False.
x = jnp.array([1.0, -2.0, np.nan], jnp.float32)
fs = {'abs(x)>=0': lambda x: jnp.abs(x) >= 0, 'exp(x)>=0': lambda x: jnp.exp(x) >= 0, 'x*x>=0': lambda x: x * x >= 0}
bad = []
for name, f in fs.items():
    ref = f(np.asarray(x))                  # numpy: [True, True, False]
    with jax.disable_jit():
        eager = np.asarray(f(x))            # op by op: [True, True, False]
    jitted = np.asarray(jax.jit(f)(x))      # XLA: [True, True, True]
    print(name, 'numpy', ref, 'op-by-op', eager, 'jit', jitted)
    if not np.array_equal(jitted, ref): bad.append(name)
assert not bad, f"jit folds {bad} to True although the element is NaN"
