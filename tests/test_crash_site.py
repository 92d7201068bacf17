"""The operation a crash happens in (`reducer.levels.jaxpr.crash_site`): prefixes of the crashing
call, the search for the first one that dies, and the signature field it gives, on real crashes."""
import json
from pathlib import Path

import pytest

from oracles.crash import Crash
from oracles.outcome import RunResult, Signature
from reducer import bug_report
from reducer.levels.jaxpr import crash_site
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import Spec
from reducer.workers.imports import preload_modules
from reducer.workers.sandbox import Limits, Sandbox

PROGRAMS = Path(__file__).parent / "programs"


def _eqn(p, ins, out, dtype="float32", subs=()):
    return {"p": p, "in": ins, "out": [[out, [3], dtype]], "params": {}, "subs": list(subs)}


def _spec(eqns, outs, transforms=("jit",)):
    return {"transforms": [{"t": t, "argnums": [0]} if t == "grad" else {"t": t} for t in transforms],
            "jaxpr": {"in": [["a", [3], "float32"]], "eqns": eqns, "out": outs},
            "args": [{"shape": [3], "dtype": "float32"}]}


CHAIN = _spec([_eqn("sin", ["a"], "b"), _eqn("argsort", ["b"], "c", "int32"), _eqn("sort", ["b"], "d"),
               _eqn("exp", ["d"], "e"), _eqn("add", ["e", "b"], "f")], ["f", "c"])


def test_a_prefix_returns_what_the_rest_reads_and_a_gradient_becomes_a_pullback():
    chain = Spec.from_data(CHAIN)
    assert [o.name for o in crash_site.frontier(chain.jaxpr, 2)] == ["b", "c", "d"]
    cut = json.loads(crash_site.prefix(chain, 2))
    assert cut["jaxpr"]["out"] == ["b", "c", "d"] and [e["p"] for e in cut["jaxpr"]["eqns"]] == ["sin", "argsort", "sort"]
    graded = Spec.from_data(dict(CHAIN, transforms=[{"t": "jit"}, {"t": "grad", "argnums": [0]}]))
    cut = json.loads(crash_site.prefix(graded, 2))
    assert [t["t"] for t in cut["transforms"]] == ["jit", "vjp"]
    assert cut["jaxpr"]["out"] == ["b", "d"]  # no integer result where the chain differentiates
    assert [e["p"] for e in cut["jaxpr"]["eqns"]] == ["sin", "sort"]


def _dying_from(op, also=()):
    """A stand-in for replaying prefixes: a prefix dies when it holds `op` or one of `also`."""
    tested = []

    def dies(text):
        ops = {e["p"] for _, j in jp.jaxprs(json.loads(text)["jaxpr"]) for e in j["eqns"]}
        tested.append(text)
        return op in ops or bool(ops & set(also))

    return dies, tested


def test_the_first_prefix_that_dies_names_the_operation_even_past_a_later_odd_one():
    dies, tested = _dying_from("sort")
    assert crash_site.operation(jp.dumps(CHAIN), dies) == "sort"
    dies, tested = _dying_from("exp")
    assert crash_site.operation(jp.dumps(CHAIN), dies) == "exp"
    dies, _ = _dying_from("never")
    assert crash_site.operation(jp.dumps(CHAIN), dies) == ""


def test_an_inner_jit_is_entered_and_a_wanted_operation_is_confirmed_in_few_tests():
    body = {"in": [["x", [3], "float32"]], "eqns": [_eqn("cos", ["x"], "y"), _eqn("sort", ["y"], "z"),
                                                    _eqn("neg", ["z"], "w")], "out": ["w"]}
    spec = _spec([_eqn("sin", ["a"], "b"), _eqn("log", ["b"], "b2"), _eqn("tanh", ["b2"], "b3"),
                  _eqn("jit", ["b3"], "c", subs=[body]), _eqn("exp", ["c"], "d")], ["d"])
    dies, tested = _dying_from("sort")
    assert crash_site.operation(jp.dumps(spec), dies) == "sort"
    searched = len(tested)
    dies, tested = _dying_from("sort")
    assert crash_site.operation(jp.dumps(spec), dies, wanted="sort") == "sort"
    assert len(tested) <= 4 < searched
    dies, tested = _dying_from("exp")  # the wanted one does not hold: the whole search says so
    assert crash_site.operation(jp.dumps(spec), dies, wanted="sort") == "exp"


def test_an_enzyme_call_is_searched_as_its_own_derivative():
    body = {"in": [["x", [3], "float32"]], "eqns": [_eqn("cos", ["x"], "y"), _eqn("sort", ["y"], "z")], "out": ["z"]}
    spec = _spec([_eqn("sin", ["a"], "b"), _eqn("enzyme", ["b"], "c", subs=[body]), _eqn("exp", ["c"], "d")], ["d"],
                 transforms=("jit", "grad"))
    seen = []
    dies, tested = _dying_from("sort")
    assert crash_site.operation(jp.dumps(spec), lambda text: seen.append(json.loads(text)) or dies(text)) == "sort"
    inner = [s for s in seen if [t["t"] for t in s["transforms"]] == ["jit", "vjp", "enzyme"]]
    assert inner and all(s["jaxpr"]["in"] == body["in"] for s in inner)  # the called function alone
    dies, tested = _dying_from("sort")
    assert crash_site.operation(jp.dumps(spec), dies, wanted="sort") == "sort" and len(tested) <= 4


def test_a_signature_without_an_operation_matches_the_crash_in_any_and_one_with_it_only_its_own():
    def sig(op):
        fields = (("platform", "cpu"), ("how", "signal"), ("detail", "SIGSEGV in jax/_src/x.py:f"))
        return Signature("crash", fields + ((("op", op),) if op else ()), f"title {op}")

    crash = Crash()
    assert crash.same(sig(""), sig("sort")) and crash.same(sig("sort"), sig("sort"))
    assert not crash.same(sig("sort"), sig("reduce_sum")) and not crash.same(sig("sort"), sig(""))
    died = RunResult(-11, "", "Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call "
                     'first):\n  File "/x/site-packages/jax/_src/x.py", line 3 in f\n', 1.0,
                     harness={crash_site.KEY: "sort"})
    assert crash.classify(died).get("op") == "sort" and "`sort`" in crash.classify(died).title
    assert "in `sort` (the crashing call, cut short right after" in bug_report.crash_sentence(crash.classify(died))


@pytest.mark.slow
@pytest.mark.parametrize("program, op", [("median_enzyme_segfault", "sort"), ("rank7_sum_segfault", "reduce_sum")])
def test_real_crashes_are_named_by_their_operation_and_a_run_confirms_it(tmp_path, program, op):
    source = (PROGRAMS / f"{program}.py").read_text()
    sandbox = Sandbox(tmp_path / "runs", script_name="prog.py", warm=True, warm_modules=preload_modules(source))
    limits = Limits(timeout=120)
    try:
        run = sandbox.run(source, limits)
        sig = Crash().classify(run)
        sites = crash_site.CrashingOperation(lambda: sandbox, limits, Crash())
        named, run = sites.establish(source, run, sig)
        assert named.get("op") == op and named.get("detail") == sig.get("detail")
        assert f"`{op}`" in sites.finding
        again = sites.attach(source, sandbox.run(source, limits))
        assert Crash().judge(named, again)[0]
    finally:
        sandbox.close()


@pytest.mark.slow
def test_a_resumed_reduction_of_a_crash_still_names_its_operation(tmp_path):
    import json

    from reducer.reduce import Options, Reduction

    program = PROGRAMS / "median_enzyme_segfault.py"
    first = Reduction(program, tmp_path / "out", Options(oracle="auto", jobs=1, runs=1))
    try:
        est = first.establish(runs=1)
    finally:
        first.close()
    assert est.signature.get("op") == "sort"
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "out" / "best.py").write_text(program.read_text())
    state = {"script_sha1": __import__("hashlib").sha1(program.read_text().encode()).hexdigest(), "oracle": "crash",
             "signature": est.signature.to_dict(), "timeout": 60.0}
    (tmp_path / "out" / "state.json").write_text(json.dumps(state))
    again = Reduction(program, tmp_path / "out", Options(oracle="auto", jobs=1), resume=True)
    try:
        resumed, best = again.resume_from()  # raises when the best program no longer shows the signature
        assert resumed.signature.get("op") == "sort" and best == program.read_text()
    finally:
        again.close()
