"""The IR level: pipelines, the MLIR representation, the dataflow graph, every IR pass, the oracles
that run Enzyme-JAX's pipeline or XLA, and `reducer reduce FILE.mlir` end to end.

Modules come from real programs: `jax.jit(f).lower(...).as_text()` below, and the files under
tests/data/mlir/ (made by tests/data/mlir/make_fixtures.py, which runs real failing programs).
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_enzyme, reducer_cli
from reducer.levels.mlir.ir_tools import default_pipeline
from reducer.levels.mlir.representation import MlirModule

DATA = Path(__file__).resolve().parent / "data" / "mlir"


@pytest.fixture(scope="module")
def mixed():
    """A real module with a call, a case, a while loop, two results and constants, under the
    enzyme-wrap pipeline enzyme_jax_ir would use for it."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    from reducer.levels.mlir import module as mm

    @jax.jit
    def g(v):
        return jnp.tanh(v) * 3.0

    def f(x, y):
        a = g(x) + jnp.sin(y)
        b = lax.cond(x[0] > 0, lambda t: t * 2.0, lambda t: t - 1.0, a)
        c = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 1.5), (0, b))[1]
        return jnp.sum(c), jnp.max(y)

    text = jax.jit(f).lower(jnp.ones(4), jnp.ones(4)).as_text()
    return MlirModule().normalize(mm.join(default_pipeline(text), text))


def candidates(pass_, program, limit=400):
    """The first candidates a pass makes for a program, in the order the engine asks for them: the
    program parsed once by its representation (in the IR worker for a pass that runs there)."""
    import itertools

    from reducer.engine import proposals
    from reducer.levels.mlir import pipeline as pl

    rep = pl.PipelineText() if pass_.name in ("drop-passes", "drop-options") else getattr(pass_, "rep", MlirModule())
    return list(itertools.islice(proposals(pass_, rep.parse(program)), limit))


def valid_smaller(program, cands):
    """The candidates the engine would run: they pass the verifier and are smaller."""

    rep = MlirModule()
    return [c for c in cands if rep.verify(c) and rep.key(c) < rep.key(program)]


# -- pipelines ----------------------------------------------------------------------------------------
def test_pipeline_parse_render_and_activities():
    from reducer.levels.mlir import module as mm, pipeline as pl

    header, _ = mm.split((DATA / "topk_enzyme.mlir").read_text())
    passes = pl.parse(header)
    assert pl.parse(pl.render(passes)) == passes
    assert pl.count_passes(passes) > 50 and "enzyme-wrap" in [p.name for p in passes]
    assert pl.entry_function(header) == "main"
    nested = pl.parse('a{x="b,c" y=1},func.func(cse,canonicalize{max-iterations=2})')
    assert nested[0].options == ['x="b,c"', "y=1"] and [p.name for p in nested[1].nested] == ["cse", "canonicalize"]
    with pytest.raises(ValueError):
        pl.parse("canonicalize{unclosed")
    wrap = pl.wrap_pipeline("main", ["enzyme_active", "enzyme_const"], ["enzyme_active"])
    moved = pl.remap_activities(wrap, "main", [1, None], ["", "enzyme_active"], None, [])
    assert pl.parse(moved)[0].option("argTys") == "enzyme_const,enzyme_active"
    assert pl.opt_command("canonicalize,cse") == "enzymexlamlir-opt --pass-pipeline='builtin.module(canonicalize,cse)' repro.mlir"


def test_pipeline_passes_cut_largest_first_and_keep_what_enzyme_wrap_needs():
    from reducer.levels.mlir import pipeline as pl
    from reducer.levels.mlir.pipeline_passes import pipeline_passes

    drop_passes, drop_options = pipeline_passes()
    program = "inline{default-pipeline=canonicalize max-iterations=4},canonicalize,cse," + pl.wrap_pipeline(
        "main", ["enzyme_active"], ["enzyme_active"])
    first = candidates(drop_passes, program, limit=1)[0]
    assert first == ""  # the whole list first (the representation rejects it as no pipeline)
    halves = candidates(drop_passes, program)[1:3]
    assert [pl.count_passes(pl.parse(h)) for h in halves] == [2, 2]
    options = candidates(drop_options, program)
    assert "inline,canonicalize" in options[0]
    assert all(pl.parse(c)[-1].option("infn") == "main" for c in options)
    assert all(pl.parse(c)[-1].option("argTys") in (None, "enzyme_active") for c in options)
    rep = pl.PipelineText()
    assert all(rep.key(c) < rep.key(program) for c in options if rep.verify(c))


# -- representation and graph -----------------------------------------------------------------------------
def test_representation_drops_locations_and_measures(mixed):
    from reducer.levels.mlir import module as mm

    rep = MlirModule()
    raw = (DATA / "topk_enzyme.mlir").read_text()
    assert "loc(" in raw
    normal = rep.normalize(raw)
    assert "loc(" not in normal and normal.startswith("// ") and mm.split(normal)[0] == mm.split(raw)[0]
    assert "chlo.top_k" in rep.ops(normal) and "func.return" not in rep.ops(normal)
    assert rep.size(normal) == len(rep.ops(normal))
    assert rep.key(mixed)[0] == rep.size(mixed) and rep.verify(mixed)
    broken = mixed.replace("stablehlo.sine %arg1", "stablehlo.sine %arg7")
    assert not rep.verify(broken) and rep.key(broken) > rep.key(mixed)
    assert mm.parse_error(mm.split(broken)[1]) == "line 4, column 25: use of undeclared SSA value name"


def test_dataflow_graph_feeding_and_dead(mixed):
    from reducer.levels.mlir import graph as mlir_graph, module as mm

    module = mm.parse_module(mm.split(mixed)[1])
    flow = mlir_graph.Dataflow(module)
    assert flow.dead() == []
    names = [op.name for op in flow.ops]
    sine = flow.ops[names.index("stablehlo.sine")]
    case = flow.ops[names.index("stablehlo.case")]
    assert flow.index[sine] in flow.feeding(case)
    assert flow.dies_with(flow.ops[names.index("stablehlo.while")]) >= 3
    # cut what the second result computes: its reduce dies, and the graph says so
    ret = [op for op in flow.ops if op.name == "func.return"][0]
    ret.operands[1] = ret.operands[0]
    after = mlir_graph.Dataflow(module)
    assert sorted(after.ops[i].name for i in after.dead()) == [
        "stablehlo.constant", "stablehlo.maximum", "stablehlo.reduce", "stablehlo.return"]
    assert mlir_graph.remove_dead(module) == 4 and module.operation.verify()
    assert "stablehlo.maximum" not in mm.print_module(module)


# -- IR passes ------------------------------------------------------------------------------------------------
def test_every_ir_pass_proposes_valid_smaller_programs(mixed):
    from reducer.levels.mlir.passes import MLIR_PASSES, mlir_passes

    assert len(MLIR_PASSES) == 12
    proposing = set()
    for p in mlir_passes(("stablehlo.sine", "")):
        good = valid_smaller(mixed, candidates(p, mixed))
        if good:
            proposing.add(p.name)
    assert proposing >= {"isolate-culprit", "erase-ops", "operands-to-arguments", "return-earlier-value",
                         "unwrap-regions", "inline-calls", "drop-results", "drop-attributes", "shrink-tensors",
                         "canonicalize"}


def test_passes_cope_with_declarations():
    """Bodiless declarations (external functions) are left alone, or dropped when unused."""
    from reducer.levels.mlir.passes import MLIR_PASSES, IsolateCulprit
    from reducer.levels.mlir.passes.drop_unused_functions import DropUnusedFunctions

    rep = MlirModule()
    program = rep.normalize("""// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}
module {
  func.func private @ext(tensor<2xf32>) -> tensor<2xf32>
  func.func private @unused(tensor<2xf32>) -> tensor<2xf32>
  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.tanh %a : tensor<2xf32>
    %1 = func.call @ext(%0) : (tensor<2xf32>) -> tensor<2xf32>
    %2 = stablehlo.add %1, %0 : tensor<2xf32>
    return %2 : tensor<2xf32>
  }
}""")
    for cls in MLIR_PASSES:
        p = cls(("stablehlo.add", "")) if cls is IsolateCulprit else cls()
        candidates(p, program)  # raises if a pass cannot handle it
    dropped = valid_smaller(program, candidates(DropUnusedFunctions(), program))
    assert "@unused" not in dropped[0] and "@ext" in dropped[0]


def test_isolate_culprit_keeps_the_operation_alone(mixed):
    from reducer.levels.mlir import module as mm, pipeline as pl
    from reducer.levels.mlir.passes.isolate_culprit import IsolateCulprit

    alone = candidates(IsolateCulprit(("stablehlo.case", "")), mixed, limit=1)[0]
    rep = MlirModule()
    assert rep.verify(alone) and rep.ops(alone)[0] == "stablehlo.case"
    assert "@g" not in alone  # the other functions went
    wrap = [p for p in pl.parse(mm.split(alone)[0]) if p.name == "enzyme-wrap"][0]
    assert wrap.option("argTys") == "enzyme_const,enzyme_active" and wrap.option("retTys") == "enzyme_active"


def test_erase_ops_bypasses_replaces_and_kills_what_fed_it(mixed):
    from reducer.levels.mlir.passes.erase_ops import EraseOps

    rep = MlirModule()
    good = valid_smaller(mixed, candidates(EraseOps(), mixed))
    assert any("stablehlo.sine" not in c and rep.size(c) == rep.size(mixed) - 1 for c in good)
    assert any("%arg2: tensor" in c for c in good)  # a new argument stands in for a result
    assert any(rep.size(c) < rep.size(mixed) - 3 for c in good)  # what fed it died too


def test_operands_to_arguments_update_the_activity_list(mixed):
    from reducer.levels.mlir import module as mm, pipeline as pl
    from reducer.levels.mlir.passes.operands_to_arguments import OperandsToArguments

    good = valid_smaller(mixed, candidates(OperandsToArguments(), mixed))
    assert good
    for c in good[:5]:
        pipeline, module_text = mm.split(c)
        n_args = len(module_text.split("func.func public @main(")[1].split(")")[0].split("%arg")) - 1
        assert len(pl.parse(pipeline)[0].option("argTys").split(",")) == n_args


def test_unwrap_inline_drop_results_and_unused_functions(mixed):
    from reducer.levels.mlir.passes.drop_arguments import DropArguments
    from reducer.levels.mlir.passes.drop_results import DropResults
    from reducer.levels.mlir.passes.drop_unused_functions import DropUnusedFunctions
    from reducer.levels.mlir.passes.erase_ops import EraseOps
    from reducer.levels.mlir.passes.inline_calls import InlineCalls
    from reducer.levels.mlir.passes.unwrap_regions import UnwrapRegions

    rep = MlirModule()
    unwrapped = valid_smaller(mixed, candidates(UnwrapRegions(), mixed))
    assert any("stablehlo.case" not in c for c in unwrapped) and any("stablehlo.while" not in c for c in unwrapped)
    inlined = valid_smaller(mixed, candidates(InlineCalls(), mixed))
    assert inlined and "call @g" not in inlined[0] and "func.func private @g" not in inlined[0]
    dropped = valid_smaller(mixed, candidates(DropResults(), mixed))
    # the first result dropped: the while loop, the case and the sine die with it; the call stays
    # (MLIR's effect interfaces cannot say what @g does) until erase-ops erases it ...
    only_max = [c for c in dropped if "stablehlo.maximum" in c and "stablehlo.while" not in c][0]
    assert "retTys=enzyme_active " in only_max and "call @g" in only_max and "stablehlo.sine" not in only_max
    no_call = [c for c in valid_smaller(only_max, candidates(EraseOps(), only_max)) if "call @g" not in c][0]
    # ... which leaves @g unused and the first argument unused
    no_g = candidates(DropUnusedFunctions(), no_call)
    assert no_g and "@g" not in no_g[0] and rep.key(no_g[0]) < rep.key(no_call)
    no_arg = valid_smaller(no_call, candidates(DropArguments(), no_call))
    assert no_arg and "argTys=enzyme_active " in no_arg[0] and "%arg1" not in no_arg[0]


def test_shrink_tensors_shrinks_types_and_constants():
    import jax
    import jax.numpy as jnp

    from reducer.levels.mlir.passes.shrink_tensors import ShrinkTensors

    import numpy as np

    text = jax.jit(lambda x: x * np.arange(6, dtype=np.float32)).lower(jnp.ones(6)).as_text()
    program = MlirModule().normalize(text)
    good = valid_smaller(program, candidates(ShrinkTensors(), program))
    assert "tensor<1xf32>" in good[0] and "dense<0.000000e+00> : tensor<1xf32>" in good[0]
    assert any("dense<[0.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<3xf32>" in c for c in good)


def test_drop_attributes_and_canonicalize(mixed):
    from reducer.levels.mlir.passes.canonicalize import Canonicalize
    from reducer.levels.mlir.passes.drop_attributes import DropAttributes

    rep = MlirModule()
    dropped = valid_smaller(mixed, candidates(DropAttributes(), mixed))
    assert any("jax.result_info" not in c for c in dropped)
    assert all(rep.key(c)[4] < rep.key(mixed)[4] for c in dropped)
    canon = candidates(Canonicalize(), mixed)
    assert canon and all(rep.verify(c) for c in canon)


# -- oracles: in process, in a worker, in a subprocess ---------------------------------------------------------
@needs_enzyme
def test_in_process_oracle_classifies_the_pipeline_failure():
    import oracles
    from reducer.levels.mlir import module as mm, run_module as mlir_run

    pipeline, module_text = mm.split((DATA / "topk_enzyme.mlir").read_text())
    run = mlir_run.run_here(mlir_run.ENZYME, module_text, pipeline)
    assert run.returncode == 1 and "Traceback" in run.stderr
    oracle, sig = oracles.detect(run)
    assert (sig.family, sig.get("source"), sig.get("op")) == ("adjoint-missing", "enzyme", "chlo.top_k")
    fine = mlir_run.run_here(mlir_run.ENZYME, module_text, "canonicalize")
    assert fine.returncode == 0 and oracles.detect(fine) is None
    broken = mlir_run.run_here(mlir_run.ENZYME, module_text, "no-such-pass")
    sharp = mlir_run.WithDiagnostic(oracles.detect(broken)[0]).classify(broken)
    assert "does not refer to a registered pass" in sharp.get("diagnostic")
    again = [mlir_run.run_here(mlir_run.ENZYME, module_text, pipeline) for _ in range(3)]
    assert all(oracle.judge(sig, run)[0] for run in again)  # the same failure each time, in this process
    assert min(run.seconds for run in again) < 5  # no interpreter to start: far under a fresh process's time


@pytest.mark.slow
@needs_enzyme
def test_worker_survives_a_crash_and_reports_its_native_frames(tmp_path):
    import oracles
    from reducer.levels.mlir import module as mm, run_module as mlir_run

    from reducer.levels.mlir.worker import IrModule
    from reducer.workers.sandbox import Limits, Sandbox

    pipeline, module_text = mm.split((DATA / "sort_crash.mlir").read_text())
    box = Sandbox(tmp_path / "runs", warm=True, warm_modules=("jax", "enzyme_ad.jax"))
    try:
        crashed = box.run(IrModule(module_text, pipeline, mlir_run.ENZYME), Limits(timeout=120))
        assert crashed.signal == 11
        again = box.run(IrModule(*reversed(mm.split((DATA / "topk_enzyme.mlir").read_text()))), Limits(timeout=120))
        assert oracles.detect(again)[1].get("op") == "chlo.top_k"
    finally:
        box.close()
    runner = mlir_run.runner_source(mlir_run.ENZYME, module_text, pipeline, native_frames=True)
    done = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, timeout=300)
    assert done.returncode == -11 and "native frame: enzyme_call" in done.stderr


# -- whole reductions -------------------------------------------------------------------------------------------
@pytest.mark.slow
@needs_enzyme
def test_reduce_enzyme_dump_end_to_end(tmp_path):
    from reducer.levels.mlir import module as mm, pipeline as pl

    out = tmp_path / "out"
    done = reducer_cli("reduce", DATA / "topk_enzyme.mlir", "--out", out, "--jobs", "1", "--quiet", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    repro = (out / "repro.mlir").read_text()
    rep = MlirModule()
    assert "chlo.top_k" in rep.ops(repro) and rep.size(repro) <= 3 and "loc(" not in repro
    pipeline = (out / "pipeline.txt").read_text().strip()
    assert pl.count_passes(pl.parse(pipeline)) <= 3 and mm.split(repro)[0] == pipeline
    report = (out / "report.md").read_text()
    assert "enzymexlamlir-opt --pass-pipeline='builtin.module(" in report and "```mlir" in report
    for name in ("signature.json", "env.json", "reduce.log", "repro.py"):
        assert (out / name).exists()
    again = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and "could not compute the adjoint" in again.stderr and "chlo.top_k" in again.stderr


@pytest.mark.slow
@needs_enzyme
def test_xla_module_reduces_in_process(tmp_path):
    from reducer.levels.mlir import module as mm
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    job = MlirReduction.from_file(DATA / "cusolver_plain.mlir", tmp_path / "xla",
                                  MlirOptions(isolation="here", verify_runs=1, full_outputs=False))
    try:
        result = job.run()
    finally:
        job.close()
    assert result["kind"] == "xla" and result["signature"]["family"] == "crash"
    assert "NOT_FOUND" in result["signature"]["fields"]["detail"]
    assert result["final_ops"] <= 3 and "stablehlo.custom_call" in result["ops"]
    assert not mm.split((tmp_path / "xla" / "repro.mlir").read_text())[0]  # no pipeline: XLA's compiler
    assert result["isolation"] == "here" and result["tested"] >= 5, result


@needs_enzyme
def test_a_crash_is_established_in_a_subprocess(tmp_path):
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    job = MlirReduction.from_file(DATA / "sort_crash.mlir", tmp_path / "crash", MlirOptions(full_outputs=False))
    try:
        given = dict(vars(job.runs))
        est = job.establish()
        sig, run = est.signature, est.run
        assert vars(job.runs).keys() == given.keys() and job.runs.text == given["text"]  # nothing written on the runs
    finally:
        job.close()
    assert job.isolation == "subprocess" and run.signal == 11
    assert sig.family == "crash" and sig.get("native").startswith("enzyme_call")
    how = est.module  # what the first runs found travels with the failure, frozen
    assert (how.kind, how.isolation, how.limits) == ("enzyme", "subprocess", est.limits) and how.original.strip()
    with pytest.raises(dataclasses.FrozenInstanceError):
        how.isolation = "worker"


def test_malformed_mlir_gives_one_line_and_status_9(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text('module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.add %a\n')
    done = reducer_cli("reduce", bad, "--out", tmp_path / "out", timeout=120)
    assert done.returncode == 9
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "bad.mlir" in done.stderr and "not a valid MLIR module" in done.stderr


# -- modules written by others: crashes of the bindings, Enzyme-JAX's dialects, forms, pipelines --------------
@pytest.fixture(scope="module")
def ir():
    """The IR worker every parse, print and edit goes through."""
    from reducer.levels.mlir import ir_worker

    return ir_worker.shared()


def remote_module(ir, name, **kw):
    from reducer.levels.mlir import module as mm

    rep = MlirModule(worker=ir, **kw)
    pipeline, module_text = mm.split((DATA / name).read_text())
    assert rep.problem(module_text) is None
    return rep, mm.join(pipeline, module_text)


def test_a_parser_crash_costs_a_candidate_not_the_reduction(ir):

    rep = MlirModule(worker=ir)
    crashing = (DATA / "parser_crash.mlir").read_text()  # jaxlib's parser segfaults on it
    crashes = ir.crashes
    assert not rep.verify(crashing) and rep.key(crashing) == (1 << 30,)
    assert ir.crashes == crashes + 1
    assert "crashed" in rep.problem(crashing)
    fine = "module {\n  func.func @f(%a: f32) -> f32 {\n    return %a : f32\n  }\n}\n"
    assert rep.verify(fine)  # the next request gets a fresh child
    from reducer.levels.mlir.passes import mlir_passes

    erase = [p for p in mlir_passes(None, rep=rep) if p.name == "erase-ops"][0]
    assert candidates(erase, crashing) == [] and "crashed (SIGSEGV)" in erase.errors[0]
    assert rep.verify(fine + "\n")


def test_each_ir_candidate_costs_one_round_trip(ir):
    """The worker keeps the program a pass works on parsed: its points cost one request, and each
    candidate one more, which brings the candidate's measure along (no parse, no replay)."""
    from reducer.levels.mlir.passes import mlir_passes

    rep, program = remote_module(ir, "cholesky_plain.mlir")
    erase = [p for p in mlir_passes(None, rep=rep) if p.name == "erase-ops"][0]
    assert rep.verify(program)  # as the engine measures a program first: the worker keeps it parsed
    asked, real = [], ir.call
    ir.call = lambda request, *a, **k: (asked.append(request["do"]), real(request, *a, **k))[1]
    try:
        item = rep.parse(program)
        points = erase.points(item)
        made = [erase.apply(item, point) for point in points[:12]]
        assert [c for c in made if c] and all(rep.verify(c) for c in made if c)
    finally:
        del ir.call
    assert len(points) > 12 and asked.count("points") == 1 and asked.count("apply") == 12
    assert len(asked) == 13


@pytest.mark.slow
def test_first_parse_crash_exits_9_with_one_line(tmp_path):
    done = reducer_cli("reduce", DATA / "parser_crash.mlir", "--out", tmp_path / "out", timeout=180)
    assert done.returncode == 9, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "parser_crash.mlir" in lines[0] and "crashed" in lines[0]


def test_passes_never_drop_required_attributes(ir):
    from reducer.levels.mlir import module as mm
    from reducer.levels.mlir.passes import mlir_passes
    from reducer.levels.mlir.passes.drop_attributes import names

    rep, program = remote_module(ir, "required_attrs.mlir")
    module = mm.parse_module(mm.split(program)[1])
    load, _, widen = [op for op in mm.walk(module) if op.name in ("llvm.load", "arith.extui")][:3]
    assert names(load) == ["reducer.note"] and names(widen) == []
    crashes, seen = ir.crashes, 0
    for p in mlir_passes(None, rep=rep):
        for cand in candidates(p, program, limit=60):
            seen += 1
            assert rep.verify(cand), (p.name, cand)
            lines = cand.splitlines()
            assert all("alignment = " in line for line in lines if "llvm.load" in line)
            assert all(" nneg " in line for line in lines if "arith.extui" in line and "i32 to i64" in line)
        assert not p.errors, p.errors
    assert seen > 5 and ir.crashes == crashes


@needs_enzyme
def test_complex_constants_are_measured_and_edited_in_the_worker(ir):
    from reducer.levels.mlir.passes import mlir_passes

    rep, program = remote_module(ir, "complex_constant.mlir")
    assert rep.key(program)[0] == 3
    proposing = {p.name for p in mlir_passes(None, rep=rep)
                 if any(rep.key(c) < rep.key(program) for c in candidates(p, program, limit=40))}
    assert {"erase-ops", "return-earlier-value"} <= proposing


@needs_enzyme
def test_enzyme_dialects_are_read_and_reduced_as_text(ir):
    from reducer.levels.mlir import module as mm
    from reducer.levels.mlir.passes import mlir_passes

    rep = MlirModule(worker=ir)
    pipeline, module_text = mm.split((DATA / "enzyme_ops.mlir").read_text())
    assert pipeline == "enzyme,canonicalize"
    assert mm.parse_error(module_text)  # jaxlib's bindings know no `enzyme` dialect ...
    assert rep.problem(module_text) is None and rep.form == "text"  # ... Enzyme-JAX's parser does
    program = mm.join(pipeline, module_text)
    assert rep.ops(program).count("enzyme.autodiff") == 1
    [drop_lines] = mlir_passes(None, rep=rep)
    smaller = [c for c in candidates(drop_lines, program) if rep.key(c) < rep.key(program)]
    assert any("@other" not in c and "enzyme.autodiff" in c for c in smaller)
    assert rep.problem("module {\n  %0 = enzymexla.no_such_op() : () -> i32\n}\n") == \
        "custom op 'enzymexla.no_such_op' is unknown"


@needs_enzyme
def test_a_printed_form_that_changes_the_failure_is_passed_over(ir):
    rep, program = remote_module(ir, "printed_form.mlir")
    from reducer.levels.mlir import module as mm

    def diagnostic(p):
        pipeline, module_text = mm.split(p)
        return ir.call({"do": "diagnose", "module": module_text, "pipeline": pipeline})["diagnostic"]

    wanted = diagnostic(program)
    assert "complex.add" in wanted
    notes = []
    adopted = rep.adopt(program, lambda p: diagnostic(p) == wanted, notes.append)
    assert rep.form == "generic" and '"llvm.fcmp"' in adopted and diagnostic(adopted) == wanted
    assert notes == ["the module as the MLIR bindings print it (pretty form) does not fail the same way"]


def test_dead_code_removal_asks_mlir_and_keeps_what_the_failure_names():
    from oracles.outcome import Signature
    from reducer.levels.mlir import graph as mlir_graph, failure_names, module as mm

    text = (DATA / "unused_alloc.mlir").read_text()
    sig = Signature("crash", (("how", "parse"), ("diagnostic", "'memref.alloc' op is not what the pass expects")))
    assert failure_names.named_ops(sig) == {"memref.alloc"}
    xla = Signature("crash", (("diagnostic", "Dialect `memref' not found for custom op 'memref.alloc'"),))
    assert failure_names.named_ops(xla) == {"memref.alloc"}
    kept = mm.parse_module(text)
    mlir_graph.remove_dead(kept, failure_names.named_ops(sig))
    names = [op.name for op in mm.walk(kept)]
    assert "memref.alloc" in names and "foo.opaque" in names  # unknown effects: kept
    bare = mm.parse_module(text)
    mlir_graph.remove_dead(bare, set())
    assert "memref.alloc" not in [op.name for op in mm.walk(bare)]  # MLIR: an unused allocation is dead
    flow = mlir_graph.Dataflow(kept)
    assert [flow.ops[i].name for i in flow.dead()] == ["memref.alloc"]


@needs_enzyme
def test_pipeline_grammar_is_mlirs():
    from reducer.levels.mlir import module as mm, pipeline as pl

    assert not pl.looks_like_pipeline("builtin.module()") and not pl.PipelineText().verify("builtin.module()")
    assert not pl.PipelineText().verify("canonicalize,func.func()")
    assert pl.PipelineText().verify("builtin.module(canonicalize)")
    module = "module {\n}\n"
    assert mm.split("// cleanup\n" + module) == (None, "// cleanup\n" + module)
    assert mm.split("// canonicalize,cse\n" + module) == ("canonicalize,cse", module)
    assert pl.unregistered_passes("canonicalize,cleanup,func.func(tidy)") == ("cleanup", "tidy")


@needs_enzyme
def test_labels_say_parse_and_name_the_failing_pass(ir):
    import oracles
    from reducer.levels.mlir import module as mm, run_module as mlir_run

    bad = mlir_run.run_here(mlir_run.ENZYME, (DATA / "required_attrs.mlir").read_text().replace("{nonNeg}", "{nonNeg = 3}"),
                            "canonicalize")
    sig = mlir_run.WithDiagnostic(oracles.detect(bad)[0]).classify(bad)
    assert sig.get("how") == "parse" and sig.title.startswith("Enzyme-JAX cannot parse the module")
    assert "XLA" not in sig.title
    rep, program = remote_module(ir, "complex_constant.mlir")
    pipeline, module_text = mm.split(program)
    longer = mm.join(f"canonicalize,{pipeline},cse", module_text)
    run = mlir_run.run_here(mlir_run.ENZYME, module_text, f"canonicalize,{pipeline},cse")
    oracle, found = oracles.detect(run)
    named = rep.name_failing_pass(found, longer)
    assert named.title.startswith("Enzyme-JAX pass `enzyme-wrap` fails") and named.fields == found.fields


@needs_enzyme
@pytest.mark.slow
def test_reduce_a_module_with_enzyme_operations_end_to_end(tmp_path):
    import os

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = reducer_cli("reduce", DATA / "enzyme_ops.mlir", "--out", tmp_path / "out", "--jobs", "1", timeout=600,
                       env=dict(os.environ, TMPDIR=str(scratch)))
    assert done.returncode == 0, done.stderr
    assert "reducing it as text" in done.stderr
    repro = (tmp_path / "out" / "repro.mlir").read_text()
    assert repro.startswith("// enzyme\n") and "enzyme.autodiff" in repro and "@other" not in repro
    report = (tmp_path / "out" / "report.md").read_text()
    assert report.startswith("# Enzyme-JAX pass `enzyme` fails on `complex.add`")
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("reducer-")]


def test_bench_lit_reads_run_lines_and_split_files(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_lit", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_lit.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lit = tmp_path / "t.mlir"
    lit.write_text('// RUN: enzymexlamlir-opt %s --pass-pipeline="builtin.module(canonicalize,func.func(cse))" '
                   "--split-input-file | FileCheck %s\nmodule {\n}\n// CHECK: module\n\n// -----\n\nmodule {\n}\n")
    assert [(n, p.splitlines()[0]) for n, p in bench.modules_of(lit)] == \
        [("t.mlir#0", "// canonicalize,func.func(cse)"), ("t.mlir#1", "// canonicalize,func.func(cse)")]
    assert bench.run_pipeline("// RUN: enzymexlamlir-opt %s --enzyme-hlo-opt=max_constant_expansion=1 --cse "
                              "--allow-unregistered-dialect | FileCheck %s") == "enzyme-hlo-opt{max_constant_expansion=1},cse"
    assert bench.run_pipeline("module {\n}\n") is None
