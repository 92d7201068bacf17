"""Beta calibration of classifier scores: the calibrated probability is the regularised incomplete
beta function I_x(a, b), and a and b are fitted by gradient descent on the log loss."""
import jax
import jax.numpy as jnp


def calibrate(params, scores):
    a, b = jnp.exp(params)
    return jax.scipy.special.betainc(a, b, scores)


def log_loss(params, scores, labels):
    p = jnp.clip(calibrate(params, scores), 1e-6, 1 - 1e-6)
    return -jnp.mean(labels * jnp.log(p) + (1 - labels) * jnp.log(1 - p))


def main():
    scores = jnp.array([0.1, 0.4, 0.35, 0.8, 0.9, 0.65])
    labels = jnp.array([0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    params = jnp.zeros(2)
    for i in range(3):
        params = params - 0.5 * jax.grad(log_loss)(params, scores, labels)
        print("step", i, params)


if __name__ == "__main__":
    main()
