"""Laplace approximation for the shape of a gamma model: the curvature (second derivative) of the
negative log-likelihood with respect to the shape parameter a, where the likelihood uses the
regularised incomplete gamma function (censored observations)."""
import jax
import jax.numpy as jnp


def censored_nll(a, times, censored_at):
    # observed events: gamma log-density; censored ones: log survival = log(1 - P(a, t))
    logpdf = (a - 1) * jnp.log(times) - times - jax.scipy.special.gammaln(a)
    survival = 1.0 - jax.scipy.special.gammainc(a, censored_at)
    return -(jnp.sum(logpdf) + jnp.sum(jnp.log(survival)))


def laplace_std(a, times, censored_at):
    curvature = jax.grad(jax.grad(censored_nll))(a, times, censored_at)
    return 1.0 / jnp.sqrt(curvature)


def main():
    times = jnp.array([0.5, 1.2, 2.3, 0.8, 1.9])
    censored_at = jnp.array([2.5, 3.0])
    a = 2.0
    for i in range(3):
        a = a - 0.05 * jax.grad(censored_nll)(a, times, censored_at)
    print("shape", a, "+-", laplace_std(a, times, censored_at))


if __name__ == "__main__":
    main()
