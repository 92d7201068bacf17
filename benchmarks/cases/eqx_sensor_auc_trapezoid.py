"""Equinox MLP trained with Optax to classify machine-sensor traces as faulty/ok.
Each trace is summarised into features, one of which is the area under the curve
computed with jnp.trapezoid (unit sample spacing) and then capped at AUC_CAP, so
that traces whose first reading saturated to +inf (the ADC reports overflow as inf)
simply get the capped area.  Features are checked for finiteness before a few
jitted training steps.
Origin: jnp.trapezoid(y) with y[0] == +inf and no x argument returns NaN (np.trapezoid returns +inf), so the jnp.clip cap cannot rescue it.
Fix: use np.trapezoid for the area (or pass x explicitly).
Owner: JAX
"""
import numpy as np
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

N_TRACES, TRACE_LEN = 48, 100
AUC_CAP = 1e4


def load_traces(seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, TRACE_LEN)
    freq = rng.uniform(1.0, 5.0, size=(N_TRACES, 1))
    traces = 2.0 + np.sin(2 * np.pi * freq * t) + 0.1 * rng.normal(size=(N_TRACES, TRACE_LEN))
    labels = (freq[:, 0] > 3.0).astype(np.float32)
    saturated = rng.choice(N_TRACES, size=4, replace=False)
    traces[saturated, 0] = np.inf  # ADC overflow on power-up
    return jnp.asarray(traces, jnp.float32), jnp.asarray(labels)


def summarise(traces):
    auc = jnp.clip(jnp.trapezoid(traces, axis=-1), 0.0, AUC_CAP) / AUC_CAP
    body = traces[:, 1:]  # skip the power-up sample for the moment statistics
    feats = [auc, body.mean(-1), body.std(-1), body.max(-1) - body.min(-1)]
    return jnp.stack(feats, axis=-1)


class Classifier(eqx.Module):
    layers: list

    def __init__(self, din, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(din, 16, key=k1), eqx.nn.Linear(16, 1, key=k2)]

    def __call__(self, x):
        x = jax.nn.relu(self.layers[0](x))
        return self.layers[1](x)[0]


def loss_fn(model, x, y):
    logits = jax.vmap(model)(x)
    return optax.sigmoid_binary_cross_entropy(logits, y).mean()


@eqx.filter_jit
def train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


optim = optax.adamw(3e-3, weight_decay=1e-4)

if __name__ == "__main__":
    traces, labels = load_traces()
    x = summarise(traces)
    x_np = np.asarray(x)
    if not np.isfinite(x_np).all():
        rows = np.where(~np.isfinite(x_np).all(axis=1))[0]
        raise SystemExit(f"non-finite features in traces {rows.tolist()}: {x_np[rows]}")
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)

    model = Classifier(x.shape[1], jax.random.PRNGKey(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    for step in range(30):
        model, opt_state, loss = train_step(model, opt_state, x, labels)
        if step % 10 == 0:
            print(f"step {step}: loss={float(loss):.4f}")
    acc = jnp.mean((jax.vmap(model)(x) > 0) == (labels > 0.5))
    print(f"train accuracy {float(acc):.3f}")
