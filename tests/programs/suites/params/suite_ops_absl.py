"""An absltest suite of small JAX ops, parameterized as users write it: in each test one case fails."""
from absl.testing import absltest
from absl.testing import parameterized

import jax
import jax.numpy as jnp

BOUNDS = {"sigmoid": (jax.nn.sigmoid, 1.0), "relu6": (jax.nn.relu6, 6.0), "hard_tanh": (jax.nn.hard_tanh, 0.5)}


def running_lse(x):
    return jax.lax.cumlogsumexp(x)


def running_max(x):
    return jax.lax.cummax(x)


class OpsTest(parameterized.TestCase):

    def setUp(self):
        super().setUp()
        self.x = jnp.linspace(-2.0, 2.0, 8)

    @parameterized.named_parameters(
        ("running_lse", running_lse, 1.0),
        dict(testcase_name="running_max", op=running_max, scale=2.0),
        ("cumsum", jnp.cumsum, 1.0),
    )
    def test_monotone(self, op, scale):
        y = op(scale * self.x)
        self.assertTrue(bool(jnp.all(jnp.diff(y) >= 0)), f"{op.__name__} is not monotone: {y}")

    @parameterized.named_parameters(*[(name, fn, bound) for name, (fn, bound) in sorted(BOUNDS.items())])
    def test_bounded(self, fn, bound):
        self.assertLessEqual(float(jnp.max(fn(self.x))), bound)

    @parameterized.parameters((4, 2), (6, 3), (5, 2))
    def test_split_halves(self, n, half):
        first, _ = jnp.split(jnp.arange(n), 2)
        self.assertEqual(first.shape, (half,))

    @parameterized.parameters({"axis": 0, "size": 1}, {"axis": -1}, {"axis": 1, "size": 1})
    def test_sum_shape(self, axis, size=8):
        self.assertEqual(jnp.sum(self.x[:, None], axis=axis).shape, (size,))

    @parameterized.product(dtype=["float32", "float16"], scale=[1.0, 10.0])
    def test_logsumexp_finite(self, dtype, scale):
        z = (scale * self.x).astype(dtype)
        naive = jnp.log(jnp.sum(jnp.exp(z)))
        self.assertTrue(bool(jnp.isfinite(naive)), f"overflow in {dtype}: {naive}")


if __name__ == "__main__":
    absltest.main()
