"""A probe's run turned into a verdict: clean, or a finding with its signature.

A program that failed is judged by the project's oracles (`oracles.detect`), as a user's program
would be; its signature is theirs, and the normal reduction can take it. A program that ran to the
end printed its derivative and its references (`reducer.hunt.programs`); the hunt compares them
itself: the Enzyme-JAX route against JAX's AD, every real dtype against float64 central finite
differences. A disagreement is a `wrong-derivative` finding naming the operation, so that two
wrong derivatives never share a signature.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

import oracles
from oracles.base import final_exception
from oracles.outcome import RunResult, Signature
from reducer.hunt.programs import MARKER
from reducer.hunt.table import Probe

#: (rtol, atol) of a derivative against float64 finite differences, by the probe's dtype
FD_TOLERANCE = {"float32": (2e-2, 2e-3), "float64": (1e-4, 1e-6)}
#: (rtol, atol) of Enzyme-JAX's derivative against JAX's, as the harness's gradient check
AD_TOLERANCE = (1e-3, 1e-5)


@dataclass
class Verdict:
    probe: Probe
    signature: Signature | None  # None: clean
    recognised: bool = False  # the signature comes from the oracles: the normal reduction can take it
    detail: str = ""
    contained: str = ""  # "timeout", "signal", "memory" when the sandbox had to stop or bury it


def _array(value) -> np.ndarray:
    if isinstance(value, dict):
        return np.asarray(value["re"], np.float64) + 1j * np.asarray(value["im"], np.float64)
    return np.asarray(value, np.float64)


def values(run: RunResult) -> dict | None:
    """The values the program printed on its last marker line, or None."""
    for line in reversed(run.stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER):])
            except ValueError:
                return None
    return None


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


def _wrong(probe: Probe, reference: str, detail: str) -> Signature:
    who = "Enzyme-JAX" if probe.route == "enzyme" else "JAX"
    against = "JAX's AD" if reference == "jax-ad" else "finite differences"
    return Signature("wrong-derivative", (("op", probe.op.name), ("route", probe.route), ("reference", reference)),
                     title=f"{who}: derivative of `{probe.op.name}` disagrees with {against}",
                     excerpt=f"{probe.mode} in {probe.dtype}: {detail}")


def _numeric(probe: Probe, seen: dict) -> Signature | None:
    if "jax" in seen:
        detail = _disagree(seen["result"], seen["jax"], AD_TOLERANCE)
        if detail:
            return _wrong(probe, "jax-ad", detail)
    if "fd" in seen and probe.dtype in FD_TOLERANCE:
        detail = _disagree(seen["result"], seen["fd"], FD_TOLERANCE[probe.dtype])
        if detail:
            return _wrong(probe, "finite-differences", detail)
    return None


def _unrecognised(run: RunResult) -> Signature:
    ended = final_exception(run.output)
    kind, message = ended if ended else ("exit", f"status {run.returncode}")
    message = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", message.splitlines()[0] if message else "")[:120]
    return Signature("unrecognised", (("exception", kind), ("message", message)),
                     title=f"{kind}: {message}", excerpt=run.output[-2000:])


def contained(run: RunResult) -> str:
    if run.timed_out:
        return "timeout"
    if run.signal is not None:
        return "signal"
    if "MemoryError" in run.output[-4000:] or "RESOURCE_EXHAUSTED" in run.output[-4000:]:
        return "memory"
    return ""


def judge(probe: Probe, run: RunResult, platform: str = "cpu") -> Verdict:
    """The verdict on one run of `probe`'s program."""
    seen = values(run)
    if run.returncode == 0 and not run.timed_out and seen is not None:
        sig = _numeric(probe, seen)
        return Verdict(probe, sig, detail=sig.excerpt if sig else "")
    found = oracles.detect(run, platform, hangs=False)
    how = contained(run)
    if found is not None:
        return Verdict(probe, found[1], recognised=True, detail=str(found[1]), contained=how)
    if run.timed_out:
        return Verdict(probe, Signature("timeout", (("after", "limit"),), title="the program did not end"),
                       detail="timed out", contained=how)
    sig = _unrecognised(run)
    return Verdict(probe, sig, detail=sig.title, contained=how)
