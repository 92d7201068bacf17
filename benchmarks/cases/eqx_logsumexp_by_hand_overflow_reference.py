"""Origin: +inf in forward of exp via jnp.exp (a hand-written log-sum-exp on logits in the thousands)
Fix: subtract the maximum before exp (jax.nn.logsumexp / jax.scipy.special.logsumexp); float64 also holds these values.

Sensor-event classifier (Equinox) with a hand-written softmax cross-entropy.

Raw sensor readings come in volts but the upstream pipeline reports them in
millivolts, so the features are ~1000x larger than unit scale.  We sanity-check
our cross-entropy against a float64 NumPy reference every step.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

IN_DIM = 10
NUM_CLASSES = 5


class Classifier(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(IN_DIM, NUM_CLASSES, width_size=32, depth=2,
                              activation=jax.nn.relu, key=key)

    def __call__(self, x):
        return self.mlp(x)


def log_sum_exp(logits):
    return jnp.log(jnp.sum(jnp.exp(logits)))


def cross_entropy(logits, label):
    return log_sum_exp(logits) - logits[label]


def loss_fn(model, x, y):
    logits = jax.vmap(model)(x)
    return jnp.mean(jax.vmap(cross_entropy)(logits, y)), logits


@eqx.filter_jit
def train_step(model, opt_state, x, y, optimizer):
    (loss, logits), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(model, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss, logits


def reference_loss(logits, y):
    z = np.asarray(logits, dtype=np.float64)
    m = np.max(z, axis=-1, keepdims=True)
    lse = np.log(np.sum(np.exp(z - m), axis=-1)) + m[:, 0]
    return np.mean(lse - z[np.arange(len(y)), np.asarray(y)])


def make_batch(key, batch_size=32):
    kx, ky = jax.random.split(key)
    x = 1000.0 * jax.random.normal(kx, (batch_size, IN_DIM))  # millivolts
    y = jax.random.randint(ky, (batch_size,), 0, NUM_CLASSES)
    return x, y


def main():
    key = jax.random.PRNGKey(0)
    model_key, data_key = jax.random.split(key)
    model = Classifier(model_key)
    optimizer = optax.sgd(1e-3, momentum=0.9)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    for step in range(3):
        data_key, sub = jax.random.split(data_key)
        x, y = make_batch(sub)
        model, opt_state, loss, logits = train_step(model, opt_state, x, y, optimizer)
        ref = reference_loss(logits, y)
        print(f"step {step}: loss={float(loss):.4f} reference={ref:.4f}")
        np.testing.assert_allclose(float(loss), ref, rtol=1e-4,
                                   err_msg=f"cross-entropy mismatch at step {step}")
    print("all steps match the reference")


if __name__ == "__main__":
    main()
