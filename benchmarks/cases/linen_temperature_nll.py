"""Flax linen text-intent classifier with a low softmax temperature (sharpened logits,
as in a distillation setup), trained for a few Optax steps with Optax's cross-
entropy. After training, a hand-written evaluation step computes per-example
negative log-likelihood in JAX and checks it against a float64 NumPy/SciPy reference
before reporting the mean eval NLL.
Origin: user code computes jnp.log(nn.softmax(logits / TEMPERATURE)) in float32; for examples whose true-class scaled logit is more than ~90 below the max, softmax underflows to 0 and the log is -inf (NumPy float32 gives the same), so the NLL is inf vs a finite reference.
Fix: use nn.log_softmax(logits / TEMPERATURE) instead of log(softmax(...)).
Owner: program
"""
import numpy as np
import scipy.special
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

NUM_CLASSES, DIM, TEMPERATURE = 8, 32, 0.05


class IntentClassifier(nn.Module):
    hidden: int = 64

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        x = nn.Dense(NUM_CLASSES)(x)
        return x


def make_data(key, n):
    kx, ky = jax.random.split(key)
    x = 3.0 * jax.random.normal(kx, (n, DIM))
    y = jax.random.randint(ky, (n,), 0, NUM_CLASSES)
    return x, y


def per_example_nll(logits, labels):
    probs = nn.softmax(logits / TEMPERATURE, axis=-1)
    logp = jnp.log(probs)
    return -jnp.take_along_axis(logp, labels[:, None], axis=-1)[:, 0]


model = IntentClassifier()
tx = optax.adam(1e-3)


@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(p):
        logits = model.apply(p, x) / TEMPERATURE
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def reference_nll(logits, labels):
    logits64 = np.asarray(logits, np.float64) / TEMPERATURE
    logp = scipy.special.log_softmax(logits64, axis=-1)
    return -logp[np.arange(len(labels)), np.asarray(labels)]


def main():
    key = jax.random.PRNGKey(42)
    k_init, k_train, k_eval = jax.random.split(key, 3)
    x_train, y_train = make_data(k_train, 128)
    x_eval, y_eval = make_data(k_eval, 64)
    params = model.init(k_init, x_train[:1])
    opt_state = tx.init(params)
    for step in range(10):
        params, opt_state, loss = train_step(params, opt_state, x_train, y_train)
        print(f"step {step}: train nll {float(loss):.3f}")

    logits = model.apply(params, x_eval)
    nll = np.asarray(per_example_nll(logits, y_eval))
    np.testing.assert_allclose(nll, reference_nll(logits, y_eval), rtol=1e-4, atol=1e-4,
                               err_msg="eval NLL disagrees with float64 reference")
    print(f"eval nll {nll.mean():.3f}")


if __name__ == "__main__":
    main()
