"""Discrete-time survival model for an oncology cohort.

Per-interval hazard MLP (Equinox) trained with Optax on a monthly follow-up
grid.  Training runs under jax.debug_nans so that any numerical problem in
the likelihood is reported at the op that produced it.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_INTERVALS = 12          # monthly intervals, 1 year of follow-up
N_PATIENTS = 512
SEED = 0


def make_cohort(seed=SEED, n=N_PATIENTS):
    rng = np.random.default_rng(seed)
    age = rng.normal(63.0, 9.0, n)
    log_psa = rng.normal(1.5, 0.8, n)
    ecog = rng.integers(0, 3, n).astype(np.float64)
    metastatic = (rng.uniform(size=n) < 0.06).astype(np.float64)
    noise = rng.normal(size=(n, 6))

    base_logit = -3.2 + 0.04 * (age - 63.0) + 0.6 * (log_psa - 1.5) + 0.4 * ecog
    event_time = np.full(n, N_INTERVALS, dtype=np.int64)   # N_INTERVALS == no event
    for i in range(n):
        if metastatic[i]:
            event_time[i] = 0                     # all died within the first month
            continue
        for t in range(N_INTERVALS):
            if rng.uniform() < 1.0 / (1.0 + np.exp(-(base_logit[i] + 0.05 * t))):
                event_time[i] = t
                break
    censor_time = rng.integers(3, N_INTERVALS + 1, n)     # administrative / dropout
    observed = event_time < censor_time
    last_interval = np.where(observed, event_time, censor_time - 1)

    feats = np.column_stack([age, log_psa, ecog, metastatic, noise])
    feats = (feats - feats.mean(0)) / feats.std(0)

    t_grid = np.arange(N_INTERVALS)[None, :]
    at_risk = (t_grid <= last_interval[:, None]).astype(np.float32)
    events = ((t_grid == last_interval[:, None]) & observed[:, None]).astype(np.float32)
    return (jnp.asarray(feats, jnp.float32), jnp.asarray(at_risk), jnp.asarray(events))


class HazardNet(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, n_features, key):
        self.mlp = eqx.nn.MLP(n_features, N_INTERVALS, width_size=64, depth=2,
                              activation=jax.nn.gelu, key=key)

    def __call__(self, x):
        return self.mlp(x)            # hazard logits, one per interval


def neg_log_likelihood(model, x, at_risk, events):
    logits = jax.vmap(model)(x)
    # P(event in t | alive at t) = h_t ; P(survive t | alive at t) = 1 - h_t
    # FIX: log(h) = log_sigmoid(z), log(1 - h) = log_sigmoid(-z); never forms 1 - sigmoid(z)
    ll = events * jax.nn.log_sigmoid(logits) + (1.0 - events) * jax.nn.log_sigmoid(-logits)
    return -jnp.sum(at_risk * ll) / jnp.sum(at_risk)


@eqx.filter_jit
def train_step(model, opt_state, x, at_risk, events):
    loss, grads = eqx.filter_value_and_grad(neg_log_likelihood)(model, x, at_risk, events)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


optim = optax.adam(3e-2)


def concordance_proxy(model, x, at_risk, events):
    risk = jax.nn.sigmoid(jax.vmap(model)(x)).mean(axis=1)
    died = events.sum(1) > 0
    return float(jnp.mean(risk[died])), float(jnp.mean(risk[~died]))


def main():
    x, at_risk, events = make_cohort()
    print(f"patients={x.shape[0]} events={int(events.sum())} "
          f"person-months at risk={int(at_risk.sum())}")
    model = HazardNet(x.shape[1], jax.random.PRNGKey(SEED))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    with jax.debug_nans(True):   # fail loudly at the first NaN
        for step in range(1, 601):
            model, opt_state, loss = train_step(model, opt_state, x, at_risk, events)
            if step % 50 == 0:
                print(f"step {step:4d}  nll {float(loss):.4f}")
    died, alive = concordance_proxy(model, x, at_risk, events)
    print(f"mean predicted hazard: died={died:.3f} survived={alive:.3f}")


if __name__ == "__main__":
    main()
