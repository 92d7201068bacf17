"""Mixture-of-prototypes classifier with an annealed softmax temperature (Equinox + Optax).

Each class has a few learned prototypes; an input attends over the prototypes
with a temperature-scaled softmax, and the temperature is annealed towards a
hard assignment during training.
"""
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

cfg = {
    "n_classes": 4,
    "protos_per_class": 3,
    "dim": 8,
    "embed": 16,
    "batch": 128,
    "lr": 1e-2,
    "steps": 40,
    "temp_start": 1.0,
    "temp_decay": 0.8,
    "temp_min": 0.1,
    "eval_temp": 0.01,  # near-hard assignment at evaluation
}


class ProtoMixture(eqx.Module):
    encoder: eqx.nn.MLP
    prototypes: jax.Array

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.encoder = eqx.nn.MLP(cfg["dim"], cfg["embed"], width_size=32, depth=2, key=k1)
        n_protos = cfg["n_classes"] * cfg["protos_per_class"]
        self.prototypes = jax.random.normal(k2, (n_protos, cfg["embed"]))

    def __call__(self, x, temp):
        z = self.encoder(x)
        scores = self.prototypes @ z  # (n_protos,)
        attn = jax.nn.softmax(scores / temp)
        # class probability = total attention mass on that class's prototypes
        return attn.reshape(cfg["n_classes"], cfg["protos_per_class"]).sum(-1)


def make_data(key, n):
    kc, kx, kl = jax.random.split(key, 3)
    centers = jax.random.normal(kc, (cfg["n_classes"], cfg["dim"])) * 2.0
    labels = jax.random.randint(kl, (n,), 0, cfg["n_classes"])
    x = centers[labels] + jax.random.normal(kx, (n, cfg["dim"]))
    return x, labels


def loss_fn(model, x, y, temp):
    probs = jax.vmap(model, in_axes=(0, None))(x, temp)
    p_y = probs[jnp.arange(x.shape[0]), y]
    return -jnp.log(p_y).mean()


@eqx.filter_jit
def train_step(model, opt_state, x, y, temp):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y, temp)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


key = jax.random.PRNGKey(0)
data_key, model_key = jax.random.split(key)
x, y = make_data(data_key, 2 * cfg["batch"])
x, y, x_val, y_val = x[:cfg["batch"]], y[:cfg["batch"]], x[cfg["batch"]:], y[cfg["batch"]:]
model = ProtoMixture(model_key)
optim = optax.adam(cfg["lr"])
opt_state = optim.init(eqx.filter(model, eqx.is_array))

temp = cfg["temp_start"]
for step in range(cfg["steps"]):
    model, opt_state, loss = train_step(model, opt_state, x, y, jnp.float32(temp))
    if step % 5 == 0:
        print(f"step {step:2d}  temp {temp:.4f}  loss {float(loss):.4f}")
    temp = max(temp * cfg["temp_decay"], cfg["temp_min"])

val_probs = jax.vmap(model, in_axes=(0, None))(x_val, cfg["eval_temp"])
val_acc = jnp.mean(jnp.argmax(val_probs, -1) == y_val)
val_loss = eqx.filter_jit(loss_fn)(model, x_val, y_val, cfg["eval_temp"])
print(f"val accuracy: {float(val_acc):.3f}  val loss: {float(val_loss):.4f}")
assert jnp.isfinite(val_loss), "validation loss is not finite"
