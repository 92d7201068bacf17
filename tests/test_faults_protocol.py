"""Every localiser implements the one fault-location protocol (`reducer.faults.Localiser`): it says
which signature fields its faults set (`fields`), and `locate(program, run, signature)` hands back a
`reducer.faults.Fault` whose fields are among them (with a sentence of evidence), or None. Each is
checked on a stand-in for what it runs (cheap), and, where Enzyme-JAX's IR worker is at hand, on
real modules."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import needs_enzyme
from oracles.crash import Crash
from oracles.outcome import RunResult, Signature
from reducer.faults import Fault, Localiser, render, signed
from reducer.faults.alone import WHOLE
from reducer.faults.nonfinite import NonFiniteValues
from reducer.levels.jaxpr import crash_site, program as jp
from reducer.levels.mlir import crash_pass, failure_names, module as mm, wrong_gradient, xla_passes, xla_results
from reducer.levels.mlir.ir_worker import Crashed
from reducer.levels.mlir.representation import MlirModule

DATA = Path(__file__).resolve().parent / "data" / "mlir"
CRASH = Signature("crash", (("platform", "cpu"), ("how", "signal"), ("detail", "SIGSEGV")), "crash")
PASS_FAILURE = Signature("crash", (("how", "pass-failure"), ("diagnostic", "bad")), "fails")
WRONG = Signature("wrong-result", (("source", "xla"),), "differs")
PIPELINE = "canonicalize,cse,enzyme-wrap{infn=main outfn= retTys=enzyme_active argTys=enzyme_active mode=ReverseModeCombined},canonicalize"
MODULE = "module {\n}\n"


def satisfies(localiser, fault) -> Fault | None:
    """`localiser` implements the protocol, and `fault` (what its `locate` gave) is one of its."""
    assert isinstance(localiser, Localiser)
    assert isinstance(localiser.fields, tuple) and localiser.fields and all(isinstance(f, str) for f in localiser.fields)
    assert fault is None or isinstance(fault, Fault)
    if fault is not None:
        assert fault.fields and {k for k, _ in fault.fields} <= set(localiser.fields)
        assert all(isinstance(v, str) and v for _, v in fault.fields) and fault.evidence and fault.name
    return fault


# -- non-finite values ------------------------------------------------------------------------------
#: a real run with JAX's checks on: the Inf of `sqrt`'s derivative rule under Equinox's gradient
RECORDED_CHECK = (Path(__file__).parent / "data" / "nan_checks" / "eqx_sqrt_grad.txt").read_text()


def test_nonfinite_values():
    said = NonFiniteValues(lambda text: RunResult(1, "", RECORDED_CHECK, 1.0))
    fault = satisfies(said, said.locate("x = 1\n", None, None))
    assert fault.fields == (("in", "grad"), ("op", "sqrt"), ("from", "sqrt"))
    quiet = NonFiniteValues(lambda text: RunResult(0, "", "", 1.0))
    assert satisfies(quiet, quiet.locate("x = 1\n", None, None)) is None


# -- the operation a crash happens in ---------------------------------------------------------------
def _eqn(p, ins, out):
    return {"p": p, "in": ins, "out": [[out, [3], "float32"]], "params": {}, "subs": []}


CHAIN = {"transforms": [{"t": "jit"}], "args": [{"shape": [3], "dtype": "float32"}],
         "jaxpr": {"in": [["a", [3], "float32"]], "out": ["d"],
                   "eqns": [_eqn("sin", ["a"], "b"), _eqn("sort", ["b"], "c"), _eqn("exp", ["c"], "d")]}}


class RecordingSandbox:
    """A stand-in sandbox whose capturing run records CHAIN as the crashing call."""

    script_name = "prog.py"

    def run(self, script, limits, isolated=False):
        return RunResult(-11, "", "", 1.0, harness={"ahead": [jp.dumps(CHAIN)]})


class SortDies(crash_site.CrashingOperation):
    """Prefixes of the recorded call die when they hold a `sort` (instead of replaying them)."""

    def dies(self, like):
        return lambda text: "sort" in {e["p"] for _, j in jp.jaxprs(json.loads(text)["jaxpr"]) for e in j["eqns"]}


def test_crash_sites():
    sites = SortDies(RecordingSandbox, None, Crash())
    fault = satisfies(sites, sites.locate("x = 1\n", None, CRASH))
    assert fault.fields == (("op", "sort"),) and "`sort`" in fault.evidence
    assert satisfies(sites, sites.locate("x = 1\n", None, PASS_FAILURE)) is None  # no death by a signal


# -- the pass of a pipeline that fails, or kills the process ------------------------------------------
def test_failing_pass():
    said = failure_names.FailingPass(lambda module, pipeline: "bad" if "cse" in pipeline else None)
    fault = satisfies(said, said.locate(mm.join(PIPELINE, MODULE), None, PASS_FAILURE))
    assert fault.fields == (("pass", "cse"),)
    assert satisfies(said, said.locate(mm.join(PIPELINE, MODULE), None, CRASH)) is None  # not a pass failure
    assert satisfies(said, said.locate(MODULE, None, PASS_FAILURE)) is None  # no pipeline


class DyingWorker:
    """A stand-in IR worker whose child dies by SIGSEGV in `enzyme-wrap`."""

    def call(self, request):
        if "enzyme-wrap" in request["pipeline"]:
            raise Crashed("died", 11)
        return {"diagnostic": ""}


class Rep:
    def __init__(self, worker=None, ops=()):
        self.worker, self._ops = worker, list(ops)

    def ops(self, program):
        return self._ops


def test_crashing_pass():
    said = crash_pass.CrashingPass(DyingWorker())
    fault = satisfies(said, said.locate(mm.join(PIPELINE, MODULE), None, CRASH))
    assert fault.fields == (("pass", "enzyme-wrap"),) and fault.title == "SIGSEGV in Enzyme-JAX pass `enzyme-wrap`"
    assert satisfies(said, said.locate(mm.join(PIPELINE, MODULE), None, PASS_FAILURE)) is None
    named = crash_pass.named(Rep(DyingWorker()), CRASH, mm.join(PIPELINE, MODULE))
    assert named == signed(CRASH, fault) and named.fields == CRASH.fields + (("pass", "enzyme-wrap"),)
    assert named.title == "SIGSEGV in Enzyme-JAX pass `enzyme-wrap`"
    assert crash_pass.named(Rep(None), CRASH, mm.join(PIPELINE, MODULE)) == CRASH


# -- the operation wrong on its own -----------------------------------------------------------------
class KeptAlone:
    """Operations kept alone as `alone:OP`, instead of by the `isolate-culprit` pass."""

    def alone(self, program, op):
        return f"alone:{op}"


class StandInGradient(KeptAlone, wrong_gradient.GradientCulprit):
    pass


class StandInResults(KeptAlone, xla_results.ResultCulprit):
    pass


OPS = ["stablehlo.constant", "stablehlo.multiply", "chlo.digamma", "stablehlo.add", "stablehlo.multiply"]


@pytest.mark.parametrize("kind", [StandInGradient, StandInResults])
def test_operations_wrong_alone(kind):
    logged = []
    said = kind(Rep(ops=OPS), lambda alone: alone == "alone:chlo.digamma", logged.append)
    fault = satisfies(said, said.locate("module", None, None))
    assert fault.fields == (("op", "chlo.digamma"),) and logged[-1].startswith("operation at fault: chlo.digamma (")
    tried = []
    said = kind(Rep(ops=OPS), lambda alone: tried.append(alone) and False, logged.append)
    fault = satisfies(said, said.locate("module", None, None))
    assert fault.fields == (("op", WHOLE),) and logged[-1].startswith("no operation's ")
    assert "alone:stablehlo.constant" not in tried and len(tried) == len(set(tried)) == 3
    first = "alone:chlo.digamma" if kind is StandInGradient else "alone:stablehlo.multiply"
    assert tried[0] == first  # the gradient's tries the chlo dialect first; the results' the module's order


# -- XLA's culprit pass -----------------------------------------------------------------------------
class XlaJob:
    """A stand-in job whose candidates fail unless XLA's `algsimp` pass is off."""

    def run_candidate(self, program, how, xla=None):
        off = (how.xla if xla is None else xla).get("options", {}).get("xla_disable_hlo_passes", "")
        return RunResult(0 if "algsimp" in off.split(",") else 1, "", "", 1.0)


def test_xla_culprit_pass(monkeypatch):
    from reducer.levels.mlir.module_runs import ModuleFailure
    from reducer.levels.mlir.run_module import XLA_RESULTS
    from reducer.workers.sandbox import Limits

    passes = lambda job, text, limits: ["fusion", "algsimp", "layout-assignment"]  # noqa: E731
    monkeypatch.setattr(xla_passes, "changing_passes", passes)
    how = ModuleFailure("m", MODULE, mm.join(None, MODULE), XLA_RESULTS, Limits(), xla={"reference": {}})
    job, logged = XlaJob(), []
    said = xla_passes.CulpritPass(job, how, logged.append)
    fault = satisfies(said, said.locate(mm.join(None, MODULE), None, WRONG))
    assert fault.fields == (("xla-pass", "algsimp"),) and "--xla_disable_hlo_passes=algsimp" in fault.evidence
    assert how.xla == {"reference": {}}  # the options as they were: each run was given its own
    assert xla_passes.culprit(job, how, mm.join(None, MODULE), logged.append) == {"pass": "algsimp"}
    monkeypatch.setattr(xla_passes, "changing_passes", lambda job, text, limits: ["fusion"])
    assert satisfies(said, said.locate(mm.join(None, MODULE), None, WRONG)) is None  # nothing makes it go away


def test_fields_render_into_a_signature_and_the_log():
    fault = Fault("sort", (("op", "sort"),), "why", "SIGSEGV in `sort`")
    assert signed(CRASH, fault) == Signature("crash", CRASH.fields + (("op", "sort"),), "SIGSEGV in `sort`")
    assert signed(CRASH, Fault("sort", (("op", "sort"),), "why")).title == CRASH.title
    assert signed(CRASH, None) is CRASH and render((("in", "grad"), ("op", "log"))) == "in=grad op=log"


# -- on real modules, in Enzyme-JAX's IR worker -----------------------------------------------------
@pytest.fixture(scope="module")
def ir():
    from reducer.levels.mlir import ir_worker

    return ir_worker.shared()


@needs_enzyme
def test_real_pipelines_name_the_pass_that_fails_and_the_one_a_crash_dies_in(ir):
    pipeline, module_text = mm.split((DATA / "complex_constant.mlir").read_text())
    longer = mm.join(f"canonicalize,{pipeline},cse", module_text)

    def diagnostic(module, prefix):
        try:
            return ir.call({"do": "diagnose", "module": module, "pipeline": prefix})["diagnostic"]
        except (Crashed, RuntimeError):
            return None

    said = failure_names.FailingPass(diagnostic)
    assert satisfies(said, said.locate(longer, None, PASS_FAILURE)).fields == (("pass", "enzyme-wrap"),)
    said = crash_pass.CrashingPass(ir)
    fault = satisfies(said, said.locate((DATA / "sort_crash.mlir").read_text(), None, CRASH))
    assert fault.fields == (("pass", "enzyme-wrap"),) and "Enzyme-JAX pass `enzyme-wrap`" in fault.title


@needs_enzyme
def test_real_modules_name_the_operation_wrong_on_its_own(ir):
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import digamma

    text = jax.jit(lambda x: jnp.sum(digamma(jnp.exp(x)) * jnp.tanh(x))).lower(jnp.ones(3)).as_text()
    rep = MlirModule(worker=ir)
    program = mm.join(None, text)
    seen = []

    def wrong(alone: str) -> bool:  # a stand-in for the gradient check: the module of digamma alone
        seen.append(alone)
        return "chlo.digamma" in alone and "tanh" not in alone

    for kind in (wrong_gradient.GradientCulprit, xla_results.ResultCulprit):
        said = kind(rep, wrong, lambda line: None)
        assert satisfies(said, said.locate(program, None, None)).fields == (("op", "chlo.digamma"),)
    assert seen and all("stablehlo.exponential" not in s for s in seen if "chlo.digamma" in s)
