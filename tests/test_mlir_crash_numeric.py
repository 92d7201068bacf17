"""The IR level for crashes and wrong gradients, on real modules with Enzyme-JAX's pipeline run for
real: a pipeline that kills the process (a sort's reverse mode, tests/data/mlir/sort_crash.mlir)
and a gradient that disagrees with finite differences (Enzyme-JAX's derivative of `digamma`);
the module each comes from when a script fails so (`reducer.levels.mlir.script_module`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_enzyme, reducer_cli
from reducer.levels.mlir.ir_tools import default_pipeline

DATA = Path(__file__).resolve().parent / "data" / "mlir"
MEDIAN_SCRIPT = """\
import jax
from enzyme_ad.jax import enzyme_jax_ir
f = enzyme_jax_ir()(lambda x: jax.numpy.median(x))
jax.jit(jax.grad(f))(jax.numpy.ones(3))
"""
DIGAMMA_SCRIPT = """\
\"\"\"A gradient through digamma, by Enzyme-JAX and by JAX.\"\"\"
from __future__ import annotations
import jax
from enzyme_ad.jax import enzyme_jax_ir
f = jax.scipy.special.digamma
if jax.jit(jax.grad(enzyme_jax_ir()(f)))(1.0) != jax.grad(f)(1.0):
    raise SystemExit("gradient mismatch between Enzyme-JAX and JAX")
"""


def lowered(f, *shapes) -> str:
    """`f` lowered by JAX, under the reverse-mode pipeline enzyme_jax_ir would run on it."""
    import jax
    import jax.numpy as jnp

    from reducer.levels.mlir import module as mm

    text = jax.jit(f).lower(*(jnp.ones(s) for s in shapes)).as_text()
    return mm.join(default_pipeline(text), text)


@pytest.fixture(scope="module")
def digamma_module() -> str:
    import jax.numpy as jnp
    from jax.scipy.special import digamma, gammaln

    return lowered(lambda x, y: jnp.sum(gammaln(jnp.exp(x)) * y) + 1e-3 * jnp.sum(digamma(jnp.exp(x)))
                   + jnp.sum(jnp.tanh(x) * y), (3,), (3,))


@needs_enzyme
def test_a_wrong_gradient_is_judged_wrong_and_a_right_one_is_not():
    import jax.numpy as jnp
    from jax.scipy.special import digamma, gammaln

    from reducer.levels.mlir import gradient_check, module as mm

    pipeline, module_text = mm.split(lowered(lambda x: jnp.sum(digamma(x) * 2.0), (2,)))
    with pytest.raises(gradient_check.GradientDisagrees, match="finite differences in float64"):
        gradient_check.check(module_text, pipeline)
    pipeline, module_text = mm.split(lowered(lambda x, y: jnp.sum(gammaln(jnp.exp(x)) * y) + jnp.sort(x)[0]
                                             + jnp.tanh(x @ y.T).sum(), (3,), (4, 3)))
    report = gradient_check.check(module_text, pipeline)
    assert report["conclusive"] and not report["mismatch"]
    assert all(d["error"] < d["tolerance"] for d in report["directions"])


@pytest.mark.slow
@needs_enzyme
def test_a_right_gradient_does_not_fail(tmp_path):
    import jax.numpy as jnp

    from reducer.errors import NO_FAILURE, ReducerError
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    job = MlirReduction(lowered(lambda x: jnp.sum(jnp.exp(x) * jnp.sin(x)), (3,)), "exp_sin.mlir", tmp_path / "out",
                        MlirOptions(full_outputs=False))
    try:
        with pytest.raises(ReducerError) as info:
            job.check()
    finally:
        job.close()
    assert info.value.status == NO_FAILURE and "gradient check against finite differences" in str(info.value)


@pytest.mark.slow
@needs_enzyme
def test_a_gradient_that_cannot_be_checked_says_why(tmp_path):
    import jax
    import jax.numpy as jnp

    from reducer.errors import NO_FAILURE, ReducerError
    from reducer.levels.mlir import module as mm
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    text = jax.jit(lambda x, k: jnp.sum(x * 2.0) + jnp.sum(k.astype(jnp.float32))).lower(
        jnp.ones(3), jnp.ones(3, jnp.int4)).as_text()
    job = MlirReduction(mm.join(default_pipeline(text), text), "int4.mlir", tmp_path / "out",
                        MlirOptions(full_outputs=False))
    try:
        with pytest.raises(ReducerError) as info:
            job.check()
    finally:
        job.close()
    assert info.value.status == NO_FAILURE
    assert "its gradient could not be checked" in str(info.value) and "tensor<3xi4>" in str(info.value)


@pytest.mark.slow
@needs_enzyme
def test_the_digamma_module_reduces_to_digamma(tmp_path, digamma_module):
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    out = tmp_path / "out"
    job = MlirReduction(digamma_module, "dirichlet.mlir", out, MlirOptions(full_outputs=False, max_time=120,
                                                                              verify_runs=1))
    try:
        result = job.run()
    finally:
        job.close()
    fields = result["signature"]["fields"]
    assert result["signature"]["family"] == "activity-mismatch" and fields["kind"] == "numeric"
    assert fields["op"] == "chlo.digamma" and fields["reference"] == "finite-differences"
    assert "chlo.digamma" in result["ops"] and result["final_ops"] <= 2 < result["original_ops"]
    assert "enzyme-wrap" in result["opt_command"] and (out / "repro.mlir").exists()
    done = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "GradientDisagrees: Enzyme-JAX's gradient of @main" in done.stderr


@needs_enzyme
def test_a_pipeline_crash_has_one_signature_naming_its_pass_and_reduces(tmp_path):
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    seen = []
    for k in range(3):
        job = MlirReduction.from_file(DATA / "sort_crash.mlir", tmp_path / f"out{k}",
                                      MlirOptions(full_outputs=False, max_time=120, verify_runs=1))
        try:
            if k < 2:
                seen.append(job.establish().signature.to_dict())
            else:
                result = job.run()
                seen.append(result["signature"])
        finally:
            job.close()
    assert seen[0] == seen[1] == seen[2]
    fields = seen[0]["fields"]
    assert fields["how"] == "signal" and fields["detail"] == "SIGSEGV" and fields["pass"] == "enzyme-wrap"
    assert fields["native"].startswith("enzyme_call") and "enzyme-wrap" in seen[0]["title"]
    assert "stablehlo.sort" in result["ops"] and result["final_ops"] < result["original_ops"]
    assert result["final_passes"] <= 2 and (tmp_path / "out2" / "repro.mlir").exists()


@needs_enzyme
@pytest.mark.parametrize("script, crashed, wanted", [(MEDIAN_SCRIPT, True, "stablehlo.sort"),
                                                     (DIGAMMA_SCRIPT, False, "chlo.digamma")])
def test_a_script_gives_the_module_its_pipeline_ran(tmp_path, script, crashed, wanted):
    from reducer.levels.mlir import script_module, module as mm, wrong_gradient
    from reducer.workers.sandbox import Limits, Sandbox

    box = Sandbox(tmp_path / "runs", warm=False)
    try:
        text = script_module.dumped_module(box, script, Limits(timeout=120))
    finally:
        box.close()
    assert text is not None
    pipeline, module_text = mm.split(text)
    assert wrong_gradient.differentiates(pipeline) and wanted in module_text


def test_the_capture_goes_after_future_imports_and_the_follow_up_applies_where_it_should():
    from oracles.outcome import Signature
    from reducer.levels.mlir import script_module

    captured = script_module.with_capture(DIGAMMA_SCRIPT)
    compile(captured, "script.py", "exec")  # `from __future__` still comes first
    assert captured.index("from __future__") < captured.index("_reducer_capture_pipeline_inputs")
    numeric = Signature("activity-mismatch", (("source", "enzyme"), ("kind", "numeric")))
    crash = Signature("crash", (("platform", "cpu"), ("how", "signal"), ("detail", "SIGSEGV in f")))
    assert script_module.applies(numeric, "") and script_module.applies(crash, MEDIAN_SCRIPT)
    assert not script_module.applies(crash, "import jax\n")
    assert not script_module.applies(Signature("activity-mismatch", (("kind", "structure"),)), DIGAMMA_SCRIPT)


@pytest.mark.slow
@needs_enzyme
def test_reducer_check_names_the_operation_at_fault(tmp_path, digamma_module):
    import json

    (tmp_path / "dirichlet.mlir").write_text(digamma_module)
    done = reducer_cli("check", tmp_path / "dirichlet.mlir", "--json", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    sig = json.loads(done.stdout.strip().splitlines()[-1])
    assert sig["family"] == "activity-mismatch" and sig["fields"]["op"] == "chlo.digamma"
    assert sig["title"] == "Enzyme-JAX: gradient of `chlo.digamma` disagrees with finite differences"
