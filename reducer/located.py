"""The fault a reduction's signature names, located once on the original and attached to every
candidate's run, so that the oracle compares them: the operation a crash happens in
(`reducer.levels.jaxpr.crash_site.CrashingOperation`) or where a NaN or an Inf is made
(`reducer.faults.nonfinite`, under `reducer.faults.attach.Attached`). Both are localisers of the one
protocol, `reducer.faults.Localiser`, and both have the `establish` / `attach` shape the job calls.
"""
from __future__ import annotations

import dataclasses

from oracles import kinds
from oracles.base import Oracle, Signature
from reducer.established import Established
from reducer.faults import nonfinite, origin
from reducer.faults.ahead import CANCEL
from reducer.faults.attach import Attached
from reducer.levels.jaxpr import crash_site
from reducer.workers.sandbox import Limits


def _nonfinite(job, oracle: Oracle, limits: Limits) -> Attached:
    def run(text: str):  # in a child of its own: a fix patches JAX in the process it runs in
        return job.sandbox.run(text, dataclasses.replace(limits, timeout=job.bounded(limits.timeout)), CANCEL.get(),
                               isolated=True)

    return Attached(origin.ValueOrigin(run, job.log), oracle, nonfinite.applies)


def locate(job, established: Established):
    """The job's fault finder for `established` and `established` with the fault in its signature, or
    (None, established)."""
    oracle, sig = established.oracle, established.signature
    if oracle.runs_candidates:
        return None, established
    if crash_site.located(sig):
        sites = crash_site.CrashingOperation(job.sandbox, established.limits, oracle)
    elif nonfinite.applies(sig, established.run):
        sites = _nonfinite(job, oracle, established.limits)
    else:
        return None, established
    sig, run = sites.establish(job.source, established.run, sig)
    return sites, dataclasses.replace(established, signature=sig, run=run)


def resumed(job, oracle: Oracle, wanted: Signature, limits: Limits):
    """The fault finder a resumed reduction's runs need to name the fault of `wanted` again."""
    if crash_site.located(wanted) and wanted.get("op"):
        return crash_site.CrashingOperation(job.sandbox, limits, oracle, wanted)
    if kinds.nonfinite(wanted):
        sites = _nonfinite(job, oracle, limits)
        sites.expect(wanted)
        sites.localiser.expect(wanted)
        return sites
    return None
