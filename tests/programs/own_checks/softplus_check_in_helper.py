"""A two-layer regressor whose hand-written softplus overflows on unscaled features; a helper checks
the activation against NumPy's float64 `logaddexp` before training, with the parameters in a dict."""
import jax
import jax.numpy as jnp
import numpy as np


def softplus(x):
    return jnp.log(1.0 + jnp.exp(x))


def init(key, d_in, d_hidden):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d_in, d_hidden)), "b1": jnp.zeros(d_hidden),
            "w2": jax.random.normal(k2, (d_hidden, 1)) / d_hidden}


def check_activation(params, x):
    pre = x @ params["w1"] + params["b1"]
    got = np.asarray(softplus(pre))
    want = np.logaddexp(0.0, np.asarray(pre, np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def main():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(0, 255, (6, 4)).astype(np.float32))  # raw pixel values, never scaled to [0, 1]
    params = init(jax.random.PRNGKey(0), 4, 3)
    check_activation(params, x)
    print("activation matches the reference")


if __name__ == "__main__":
    main()
