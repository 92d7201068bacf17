"""Maximum-likelihood fitting of a 3-state discrete HMM with plain JAX.

Parameters live in a pytree dict of unconstrained logits.  The forward
algorithm is written with lax.scan; we fit on short chunks with gradient
ascent and then score the full held-out sequence.
"""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

NUM_STATES, NUM_SYMBOLS = 3, 6
CHUNK_LEN, TEST_LEN = 20, 600


def sample_hmm(rng, length):
    trans = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    emit = rng.dirichlet(np.ones(NUM_SYMBOLS), size=NUM_STATES)
    state, obs = 0, []
    for _ in range(length):
        obs.append(rng.choice(NUM_SYMBOLS, p=emit[state]))
        state = rng.choice(NUM_STATES, p=trans[state])
    return np.array(obs, dtype=np.int32)


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "init_logits": 0.1 * jax.random.normal(k1, (NUM_STATES,)),
        "trans_logits": 0.1 * jax.random.normal(k2, (NUM_STATES, NUM_STATES)),
        "emit_logits": 0.1 * jax.random.normal(k3, (NUM_STATES, NUM_SYMBOLS)),
    }


def log_likelihood(params, obs):
    pi = jax.nn.softmax(params["init_logits"])
    A = jax.nn.softmax(params["trans_logits"], axis=-1)
    B = jax.nn.softmax(params["emit_logits"], axis=-1)

    def step(alpha, o):
        alpha = (alpha @ A) * B[:, o]          # forward recursion
        return alpha, None

    alpha0 = pi * B[:, obs[0]]
    alpha_T, _ = lax.scan(step, alpha0, obs[1:])
    return jnp.log(alpha_T.sum())


@jax.jit
def ascent_step(params, chunks, lr=0.05):
    def objective(p):
        return jnp.mean(jax.vmap(log_likelihood, in_axes=(None, 0))(p, chunks))
    ll, grads = jax.value_and_grad(objective)(params)
    params = jax.tree_util.tree_map(lambda p, g: p + lr * g, params, grads)
    return params, ll


def main():
    rng = np.random.default_rng(0)
    train = sample_hmm(rng, 50 * CHUNK_LEN).reshape(50, CHUNK_LEN)
    test = sample_hmm(rng, TEST_LEN)

    params = init_params(jax.random.PRNGKey(0))
    for it in range(100):
        params, ll = ascent_step(params, jnp.asarray(train))
    print(f"train chunk log-lik: {float(ll):.3f}")

    test_ll = jax.jit(log_likelihood)(params, jnp.asarray(test))
    print(f"held-out log-lik per symbol: {float(test_ll) / TEST_LEN:.3f}")
    assert jnp.isfinite(test_ll), f"held-out log-likelihood is {test_ll}"


if __name__ == "__main__":
    main()
