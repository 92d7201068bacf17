"""The fault a reduction's signature names, located once on the original and attached to every
candidate's run, so that the oracle compares them: the operation a crash happens in
(`reducer.levels.jaxpr.crash_site.Sites`) or where a NaN or an Inf is made
(`reducer.faults.nonfinite`, under `reducer.faults.attach.Attached`). Both are localisers of the one
protocol, `reducer.faults.Localiser`, and both have the `establish` / `attach` shape the job calls.
"""
from __future__ import annotations

import dataclasses

from oracles.base import Oracle, Signature
from reducer.established import Established
from reducer.faults import nonfinite
from reducer.faults.attach import Attached
from reducer.levels.jaxpr import crash_site
from reducer.workers.sandbox import Limits


def _nonfinite(job, oracle: Oracle, limits: Limits) -> Attached:
    def run(text: str):
        return job.sandbox.run(text, dataclasses.replace(limits, timeout=job.bounded(limits.timeout)))

    return Attached(nonfinite.NonFiniteValues(run), oracle, nonfinite.applies)


def locate(job, est: Established):
    """The job's fault finder for `est` and `est` with the fault in its signature, or (None, est)."""
    oracle, sig = est.oracle, est.signature
    if oracle.runs_candidates:
        return None, est
    if crash_site.located(sig):
        sites = crash_site.Sites(job.sandbox, est.limits, oracle)
    elif nonfinite.applies(sig):
        sites = _nonfinite(job, oracle, est.limits)
    else:
        return None, est
    sig, run = sites.establish(job.source, est.run, sig)
    return sites, dataclasses.replace(est, signature=sig, run=run)


def resumed(job, oracle: Oracle, wanted: Signature, limits: Limits):
    """The fault finder a resumed reduction's runs need to name the fault of `wanted` again."""
    if crash_site.located(wanted) and wanted.get("op"):
        return crash_site.Sites(job.sandbox, limits, oracle, wanted)
    if wanted.family == "nonfinite":
        sites = _nonfinite(job, oracle, limits)
        sites.expect(wanted)
        return sites
    return None
