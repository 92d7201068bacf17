"""Whose bug a failure is: the projects a report can go to, each with its tracker; every family
says which of them owns a failure of its own (`Oracle.owner`)."""
from __future__ import annotations

from typing import NamedTuple


class Project(NamedTuple):
    name: str
    repo: str | None  # owner/name on GitHub; None for the program's own code


PROJECTS = {
    "jax": Project("JAX", "jax-ml/jax"),
    "xla": Project("XLA", "openxla/xla"),
    "enzyme-jax": Project("Enzyme-JAX", "EnzymeAD/Enzyme-JAX"),
    "flax": Project("Flax", "google/flax"),
    "optax": Project("Optax", "google-deepmind/optax"),
    "equinox": Project("Equinox", "patrick-kidger/equinox"),
    "program": Project("the program's own code", None),
}
#: the project of a Python package a failure is raised in
BY_PACKAGE = {"jax": "jax", "jaxlib": "jax", "enzyme_ad": "enzyme-jax", "flax": "flax", "optax": "optax",
              "equinox": "equinox", "jax_plugins": "xla", "jax_cuda12_plugin": "xla", "jax_cuda13_plugin": "xla"}


def of_package(path: str) -> str:
    """The project of a library frame or package name (`flax/linen/module.py:__getattr__`, `enzyme_ad`)."""
    return BY_PACKAGE.get(path.split("/", 1)[0].split(".", 1)[0], "jax")
