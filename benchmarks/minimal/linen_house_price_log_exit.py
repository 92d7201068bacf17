import sys, numpy as np, jax.numpy as jnp
if not np.isfinite(jnp.log(0.0)):
    sys.exit("loss became nan")
