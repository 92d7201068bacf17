"""A small absltest suite: test_clip_grad fails (a custom_vjp backward rule returns two cotangents for one input)."""
from absl.testing import absltest

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0), g)


clip_gradient.defvjp(clip_fwd, clip_bwd)


class ModelBase(absltest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.width = 4

    def setUp(self):
        super().setUp()
        self.w = jnp.linspace(-1.0, 1.0, self.width)
        self.x = jnp.ones((2, self.width))


class ModelTest(ModelBase):
    def forward(self):
        return self.x @ self.w

    def test_forward(self):
        self.assertEqual(self.forward().shape, (2,))

    def test_clip_grad(self):
        def loss(w):
            return jnp.sum(clip_gradient(self.x @ w) ** 2)

        g = jax.grad(loss)(self.w)
        self.assertEqual(g.shape, self.w.shape)

    def test_width(self):
        self.assertLen(self.w, self.width)


if __name__ == "__main__":
    absltest.main()
