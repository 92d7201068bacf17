"""`reducer corpus check --executor ray`: every case of the corpus checked as a Ray task (one CPU,
or one GPU for a GPU case), on the cluster named by `RAY_ADDRESS` or on a local one it starts, by
the same `check_case` as the local executor, on a copy of the case's folder; the outcomes come back
in the cases' order."""
from __future__ import annotations

import os
from pathlib import Path

from reducer.executors import RAY_MODULES, import_ray
from reducer.workers.scratch import folder as scratch_folder, remove as remove_scratch


def _check_task(files: dict, case, timeout: float | None):
    """One corpus case, checked on a Ray worker as `check_case` checks it here: its folder's files
    written into a scratch folder of the worker's (a module case is run as a module, a reproducer with
    the data it reads beside it), so that where a case runs never changes what it is judged to be."""
    import dataclasses

    from reducer.corpus import check_case

    scratch = scratch_folder("reducer-check-")
    try:
        for name, data in files.items():
            (scratch / name).write_bytes(data)
        outcome = check_case(dataclasses.replace(case, folder=scratch), timeout)
        seen = outcome.seen.to_dict() if outcome.seen else None
        return outcome.status, outcome.detail, seen, outcome.excerpt, outcome.seconds
    finally:
        remove_scratch(scratch)


def _files(folder: Path) -> dict[str, bytes]:
    """The files of a case's folder, by name (a case keeps its files at its top level)."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


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
            ref = task.options(**gpu).remote(_files(case.folder), case, timeout)
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
