"""The hunt's wrong-derivative family (`wrong-derivative`): a derivative a probe printed that disagrees
with its reference: the Enzyme-JAX route against JAX's AD (the tolerances of the harness's gradient
check), every real dtype against float64 central finite differences. Its signature names the
operation, the route and the reference, so that two wrong derivatives never share one.
"""
from __future__ import annotations

import numpy as np

from oracles.base import Signature

#: (rtol, atol) of a derivative against float64 finite differences, by the probe's dtype
FD_TOLERANCE = {"float32": (2e-2, 2e-3), "float64": (1e-4, 1e-6)}
#: (rtol, atol) of Enzyme-JAX's derivative against JAX's, as the harness's gradient check
AD_TOLERANCE = (1e-3, 1e-5)


def _array(value) -> np.ndarray:
    if isinstance(value, dict):
        return np.asarray(value["re"], np.float64) + 1j * np.asarray(value["im"], np.float64)
    return np.asarray(value, np.float64)


def _disagree(got, want, tol: tuple[float, float]) -> str | None:
    got, want = _array(got), _array(want)
    if got.shape != want.shape:
        return f"shape {got.shape} against {want.shape}"
    finite = np.isfinite(want)
    if np.allclose(got[finite], want[finite], rtol=tol[0], atol=tol[1]) and np.all(np.isfinite(got[finite])):
        return None
    err = np.abs(got - want)
    i = int(np.nanargmax(np.where(finite, np.nan_to_num(err, nan=np.inf), -1.0)))
    return f"{got.ravel()[i]:.6g} where the reference gives {want.ravel()[i]:.6g}"


def _wrong(op: str, route: str, how: str, reference: str, detail: str) -> Signature:
    who = "Enzyme-JAX" if route == "enzyme" else "JAX"
    against = "JAX's AD" if reference == "jax-ad" else "finite differences"
    return Signature("wrong-derivative", (("op", op), ("route", route), ("reference", reference)),
                     title=f"{who}: derivative of `{op}` disagrees with {against}", excerpt=f"{how}: {detail}")


def classify(seen: dict, op: str, route: str, mode: str, dtype: str) -> Signature | None:
    """The wrong derivative among what a probe of `op` printed (`seen`: its `result`, and JAX's AD's
    `jax` or finite differences' `fd`), taken by `route` in `mode` and `dtype`; None when it agrees."""
    if "jax" in seen:
        detail = _disagree(seen["result"], seen["jax"], AD_TOLERANCE)
        if detail:
            return _wrong(op, route, f"{mode} in {dtype}", "jax-ad", detail)
    if "fd" in seen and dtype in FD_TOLERANCE:
        detail = _disagree(seen["result"], seen["fd"], FD_TOLERANCE[dtype])
        if detail:
            return _wrong(op, route, f"{mode} in {dtype}", "finite-differences", detail)
    return None
