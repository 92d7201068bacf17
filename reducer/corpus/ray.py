"""`reducer corpus check --executor ray`: every case of the corpus checked as a Ray task (one CPU,
or one GPU for a GPU case), on the cluster named by `RAY_ADDRESS` or on a local one it starts; the
outcomes come back in the cases' order."""
from __future__ import annotations

import os
import time

from reducer.executors import RAY_MODULES, import_ray
from reducer.workers.scratch import folder as scratch_folder, remove as remove_scratch


def _check_task(repro_text: str, name: str, oracle: str, wanted: dict, platform: str, timeout: float | None):
    """One corpus case, checked on a Ray worker from its reproducer's text."""
    from oracles.outcome import Signature
    from reducer.corpus import run_once

    scratch = scratch_folder("reducer-check-")
    began = time.monotonic()
    try:
        (scratch / name).write_text(repro_text)
        status, detail, seen, excerpt, _ = run_once(scratch / name, oracle, Signature.from_dict(wanted), platform,
                                                    timeout)
        return status, detail, seen.to_dict() if seen else None, excerpt, time.monotonic() - began
    finally:
        remove_scratch(scratch)


def check_cases_on_ray(cases: list, timeout: float | None, on_done=None) -> list:
    """`reducer corpus check --executor ray`: every case a Ray task; outcomes in the cases' order."""
    from oracles.outcome import Signature
    from reducer.corpus import Outcome

    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        address = os.environ.get("RAY_ADDRESS") or None
        env = {"py_modules": RAY_MODULES} if address else None
        ray.init(address=address, runtime_env=env, include_dashboard=False, log_to_driver=False)
    task = ray.remote(num_cpus=1)(_check_task)
    try:
        refs = {}
        for i, case in enumerate(cases):
            gpu = {"num_gpus": 1} if case.platform == "gpu" else {}
            ref = task.options(**gpu).remote(case.repro.read_text(), case.repro.name, case.oracle,
                                             case.signature.to_dict(), case.platform, timeout)
            refs[ref] = i
        outcomes: list = [None] * len(cases)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = refs[ref]
                status, detail, seen, excerpt, seconds = ray.get(ref)
                outcomes[i] = Outcome(cases[i], status, detail, seconds,
                                      Signature.from_dict(seen) if seen else None, excerpt)
                if on_done:
                    on_done(outcomes[i])
        return outcomes
    finally:
        if started:
            ray.shutdown()
