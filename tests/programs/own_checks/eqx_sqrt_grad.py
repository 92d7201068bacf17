import jax, jax.numpy as jnp, equinox as eqx
class M(eqx.Module):
    w: jax.Array
    def __call__(self, x):
        return jnp.sqrt(jnp.sum((self.w * x) ** 2))
@eqx.filter_value_and_grad
def loss(model, x):
    return model(x)
v, g = loss(M(jnp.zeros(3)), jnp.ones(3))
assert jnp.isfinite(g.w).all(), g
