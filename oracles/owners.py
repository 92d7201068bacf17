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


def project(sig, oracle=None) -> Project:
    """The project that owns the failure `sig`, as its family says: the `oracle` that judged it, or
    the one the project builds for the signature."""
    if oracle is None:
        from oracles import make_oracle, oracle_spec

        oracle = make_oracle(oracle_spec(sig), sig.get("platform") or "cpu")
    return PROJECTS[oracle.owner(sig)]


#: the families whose failure may be one of XLA's passes
XLA_PASS_FAMILIES = ("wrong-result", "crash")


def xla_owns(sig, oracle=None) -> bool:
    """Whether the failure is XLA's, so that one of its passes may be at fault: a wrong result, or a
    crash XLA owns (a signal, an error status; not a hang, nor an internal error of a library), as
    the `oracle` that judged it says."""
    return sig.family in XLA_PASS_FAMILIES and project(sig, oracle).repo == PROJECTS["xla"].repo \
        and sig.get("how") != "hang"
