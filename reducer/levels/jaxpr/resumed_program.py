"""Where the traced level starts on --resume: the traced program an interrupted run kept
(`best.jaxpr`, `reducer.levels.base.LevelContext.resumed`), run once to see that it still shows
the failure; that run times its candidates as a captured program's first run would."""
from __future__ import annotations

from reducer.levels.jaxpr.worker import run_spec


def resumed_spec(spec: str, judge, sandbox, limits, log) -> tuple:
    """(`spec`, its run) when the kept traced program still shows the failure `judge`
    (`reducer.levels.jaxpr.level.Judge`) wants; else (None, None), and the level captures again."""
    run = run_spec(sandbox, judge.request(spec, explain=True), limits, max(limits.timeout, 30.0))
    ok, seen = judge(run, spec)
    if ok:
        log("jaxpr level: resuming from the traced program the interrupted run kept")
        return spec, run
    log(f"jaxpr level: the traced program the interrupted run kept shows {seen or 'no failure'}, not the "
        f"failure; capturing again")
    return None, None
