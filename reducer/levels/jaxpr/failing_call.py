"""The traced level's first step: the script run once under the capturing harness, and the first
captured call that shows the failure on its own, replayed in a warm worker (`Judge` of
`reducer.levels.jaxpr.level` judges it); none where no script written back from the captured calls
could show the failure (a value made inside a public call whose body they hold inlined)."""
from __future__ import annotations

from reducer.levels.jaxpr import nonfinite_replay
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.fault_alone import call_not_kept
from reducer.levels.jaxpr.worker import CapturedScript, run_spec
from reducer.workers.sandbox import Limits, Sandbox

#: captured programs run to find the one that shows the failure (a process that dies at exit, after
#: its last transformed call, leaves many calls that all run fine)
MAX_TRIED = 6


def capture(sandbox: Sandbox, source: str, limits: Limits, ahead: bool = False, values: bool = False) -> dict:
    """Run the script once under the capturing harness; returns {"specs", "notes", "error", "ahead"}.
    With `ahead`, every transformed call is recorded before it runs (`reducer.levels.jaxpr.calls_recorded_ahead`),
    so a run that dies or hangs still leaves its calls; with `values`, calls made inside traced ones
    get the values they were called with (a value failure replays them)."""
    run = sandbox.run(CapturedScript(sandbox.script_name, source, ahead, values), limits, isolated=True)
    if run.timed_out and not run.harness.get("ahead"):
        return {"specs": [], "notes": ["the capturing run timed out"], "error": ""}
    if "specs" not in run.harness:
        tail = run.stderr.strip().splitlines()[-1:] or [""]
        return {"specs": [], "notes": [f"the capturing run wrote nothing ({tail[0][:200]})"], "error": ""}
    return run.harness


def first_reproducing(found: dict, judge, sandbox: Sandbox, limits: Limits, log):
    """The first captured spec whose own run shows the failure, and that run; (None, None) when none."""
    for candidate in judge.candidates(found)[:MAX_TRIED]:
        chain = " ∘ ".join(jp.parse(candidate).kinds()) or "plain"
        timeout = max(limits.timeout, 30.0)
        run = run_spec(sandbox, judge.request(candidate, explain=True), limits, timeout)
        if run.timed_out:  # a loaded machine, or the first replay's extra work (the fault alone): once more, longer
            log(f"jaxpr level: a captured {chain} call's first replay ran past {timeout:.0f} s; once more with "
                f"{2 * timeout:.0f} s")
            run = run_spec(sandbox, judge.request(candidate, explain=True), limits, 2 * timeout)
        ok, seen = judge(run, candidate)
        if ok:
            return nonfinite_replay.start(candidate, run, log), run
        shown = f"ran past {2 * timeout:.0f} s" if run.timed_out else f"shows {seen or 'no failure'}, not the failure"
        log(f"jaxpr level: a captured {chain} call {shown}; skipped")
    return None, None


def captured(source: str, judge, sandbox: Sandbox, limits: Limits, log) -> tuple:
    """The first captured call of `source` that shows the failure on its own (`judge`: the level's
    `Judge`), and its run; (None, None) and a log line saying why when there is none."""
    found = capture(sandbox, source, limits, ahead=judge.records_ahead, values=bool(judge.check))
    for note in found.get("notes", [])[:3]:
        log(f"jaxpr level: not captured: {note}")
    if not judge.candidates(found):
        log("jaxpr level: no failing transformation was captured")
        return None, None
    lost = {call_not_kept(jp.parse(spec).jaxpr, judge.wanted) for spec in judge.candidates(found)[:MAX_TRIED]}
    if "" not in lost:
        log(f"jaxpr level: not reduced ({lost.pop()})")
        return None, None
    spec, first = first_reproducing(found, judge, sandbox, limits, log)
    if spec is None:
        log("jaxpr level: no captured program reproduces the failure on its own")
    return spec, first
