"""The one table of fault finders (`reducer.levels.fault_finders`): which finder places the original's
fault and which confirms a wanted signature's, each with the one protocol (`establish`, `expect`,
`attach`, `finding`); real finders, built on a stand-in for the runs they would make."""
from oracles.crash import Crash
from oracles.outcome import RunResult, Signature
from oracles.own_check import OwnCheck
from reducer.faults.attach import KEY, Attached
from reducer.levels import fault_finders
from reducer.levels.jaxpr.crash_site import CrashingOperation

SEGFAULT = Signature("crash", (("platform", "cpu"), ("how", "signal"), ("detail", "SIGSEGV")), "crash")
IN_SORT = Signature("crash", SEGFAULT.fields + (("op", "sort"),), "crash")
NAN = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert"), ("value", "nan"), ("in", "grad"),
                              ("op", "sqrt")), "nan")
RAISED = Signature("jax-error", (("type", "TypeError"),), "error")


class NoRuns:
    script_name = "prog.py"

    def run(self, *args, **kwargs):
        raise AssertionError("building or choosing a finder runs nothing")


def runs(oracle) -> fault_finders.Runs:
    return fault_finders.Runs(NoRuns, None, oracle, NoRuns().run)


def test_each_failure_gets_the_finder_of_its_row():
    assert isinstance(fault_finders.for_original(runs(Crash()), SEGFAULT, None), CrashingOperation)
    assert isinstance(fault_finders.for_original(runs(OwnCheck()), NAN, None), Attached)
    assert fault_finders.for_original(runs(OwnCheck()), RAISED, None) is None
    for finder in (CrashingOperation(None, None, Crash()), fault_finders.for_original(runs(OwnCheck()), NAN, None)):
        assert all(callable(getattr(finder, m)) for m in ("establish", "expect", "attach"))
        assert isinstance(finder.finding, str)


def test_a_wanted_fault_is_expected_of_later_runs():
    crash = fault_finders.for_wanted(runs(Crash()), IN_SORT)
    assert isinstance(crash, CrashingOperation) and crash.wanted == IN_SORT
    assert fault_finders.for_wanted(runs(Crash()), SEGFAULT) is None  # no operation named: nothing to confirm
    value = fault_finders.for_wanted(runs(OwnCheck()), NAN)
    assert isinstance(value, Attached) and value.fault.get("op") == "sqrt" and value.fault.get("in") == "grad"
    assert value.localiser.later  # the origin holds what the signature names (`ValueOrigin.expect`)
    assert fault_finders.for_wanted(runs(OwnCheck()), RAISED) is None


def test_a_traced_candidate_s_run_is_left_to_the_crash_finder():
    """A value's origin is found by running a script: a traced candidate's run (no script) keeps what
    it carries, at no cost."""
    value = fault_finders.for_wanted(runs(OwnCheck()), NAN)
    run = RunResult(1, "", "AssertionError", 1.0)
    assert value.attach("", run, '{"spec": 1}') is run and KEY not in run.harness
