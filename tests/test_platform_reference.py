"""The wrong-result oracle's second reference: the same function run op by op on the CPU, for a program
that ran on a GPU (`--platform gpu`). No GPU here or in CI: the GPU's side is a recorded device result
(what `jit` returns there), the CPU's side is computed for real; and `--platform gpu` on this machine
must be refused in one line."""
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import PROGRAMS, recorded, reducer_cli
from oracles.wrong_result import WrongResult
from reducer.errors import NO_BACKEND
from reducer.workers.sandbox import Limits, Sandbox


def scaled(x):
    """A function whose GPU result differs from its CPU one, as a GPU-only miscompile does: on a GPU,
    `jit` and op by op both take the default branch; only the CPU takes the other."""
    from jax import lax

    return lax.platform_dependent(x, cpu=lambda x: x * 2.0, default=lambda x: x * 3.0)


#: `jax.jit(scaled)(jnp.arange(4.0))` on a GPU: the default branch
GPU_RESULT = np.array([0.0, 3.0, 6.0, 9.0], dtype=np.float32)


def failed_with(*entries) -> object:
    """A run of a program that stopped on its own comparison, with the harness's `entries`."""
    run = recorded("jit_miscompare")
    return dataclasses.replace(run, harness={"program": {"exit": 1}, "results": list(entries)})


def miscompiled_call():
    """jaxlib 0.10.2's CPU miscompile (jax-ml/jax#39103): `jit` of this reduction is wrong past index
    32767, so it disagrees with op by op and with the CPU reference alike."""
    import jax
    import jax.numpy as jnp

    from reducer.cross_checks.results import Call

    def norms(x):
        return jax.vmap(lambda row: jnp.sum((jnp.eye(3) @ row) ** 2))(x)

    # the wrong sums are of another row (32 back on one machine): rows that differ by more than the
    # CPU reference's tolerance (1e-3 of the largest), so that it sees the fault on every machine
    i = jnp.arange(32_769, dtype=jnp.float32) % 1013
    points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
    return Call("norms", norms, (points,), {}, jax.jit(norms)(points))


def test_a_gpu_result_the_cpu_does_not_give_is_wrong_against_cpu():
    import jax.numpy as jnp

    from reducer.cross_checks.results import CPU, Call, _compare

    x = jnp.arange(4.0, dtype=jnp.float32)
    entry = _compare(Call("scaled", scaled, (x,), {}, GPU_RESULT), (CPU,))
    assert entry["mismatch"] and entry["disagrees_with"] == [CPU] and entry["reference"] == CPU
    assert (entry["index"], entry["jit"], entry["eager"]) == ([3], 9.0, 6.0)
    assert entry["references"][CPU]["rtol"] == 1e-3 and entry["references"][CPU]["atol_scale"] == 1e-3
    sig = WrongResult().classify(failed_with(entry))
    assert sig.get("reference") == "cpu" and sig.get("source") == "jit"
    assert "op-by-op evaluation on the CPU" in sig.title and "rtol=0.001" in sig.excerpt
    same_function_on_the_cpu = _compare(Call("scaled", scaled, (x,), {}, np.asarray(scaled(x))), (CPU,))
    assert not same_function_on_the_cpu["mismatch"] and same_function_on_the_cpu["disagrees_with"] == []
    assert WrongResult().classify(failed_with(same_function_on_the_cpu)) is None


def test_gpu_float32_rounding_is_within_the_cpu_tolerance_and_a_miscompile_is_not():
    import jax.numpy as jnp
    from jax import lax

    from reducer.cross_checks.results import CPU, OP_BY_OP, TOLERANCES, Call, _compare, differ

    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((64, 256)), dtype=jnp.float32)
    b = jnp.asarray(rng.standard_normal((256, 32)), dtype=jnp.float32)
    # what a recent GPU's `a @ b` gives by JAX's default precision: inputs rounded to TF32
    tf32 = lambda m: lax.reduce_precision(m, exponent_bits=8, mantissa_bits=10)  # noqa: E731
    on_gpu = np.asarray(jnp.matmul(tf32(a), tf32(b), precision="highest"))
    full = np.asarray(jnp.matmul(a, b, precision="highest"))
    assert differ(on_gpu, full, TOLERANCES[OP_BY_OP])[0]  # too far apart for op by op's tolerances …
    entry = _compare(Call("matmul", jnp.matmul, (a, b), {}, on_gpu), (CPU,))
    assert not entry["mismatch"] and entry["max_abs_err"] > 0  # … within the CPU reference's
    wrong = on_gpu.copy()
    wrong[5, 7] *= 1.05  # one element off by 5%, as a miscompiled kernel gives it
    entry = _compare(Call("matmul", jnp.matmul, (a, b), {}, wrong), (CPU,))
    assert entry["mismatch"] and entry["index"] == [5, 7]


def test_both_references_see_the_cpu_miscompile_and_locate_with_either():
    from reducer.cross_checks.results import CPU, OP_BY_OP, _compare, _locate

    call = miscompiled_call()
    entry = _compare(call, (OP_BY_OP, CPU))
    assert entry["disagrees_with"] == [OP_BY_OP, CPU] and entry["reference"] == OP_BY_OP
    assert entry["operation"] == entry["references"][OP_BY_OP]["operation"] == "reduce_sum"
    assert entry["references"][CPU]["mismatch"] and entry["references"][CPU]["index"] == [32768]
    assert _locate(call, CPU)["operation"] == "reduce_sum"
    sig = WrongResult().classify(failed_with(entry))
    assert sig.get("reference") == "op-by-op,cpu" and sig.get("op") == "reduce_sum"
    only_cpu = WrongResult().classify(failed_with(_compare(call, (CPU,))))
    assert only_cpu.get("reference") == "cpu" and not WrongResult().same(sig, only_cpu)


def test_a_cpu_run_has_only_the_op_by_op_reference():
    import jax

    from reducer.cross_checks.results import OP_BY_OP, ResultWatch, references

    assert references() == (OP_BY_OP,)
    watch = ResultWatch()
    watch.install()
    try:
        jax.jit(lambda x: x * 2.0)(np.arange(3.0, dtype=np.float32))
    finally:
        watch.uninstall()
    (entry,) = watch.check()
    assert list(entry["references"]) == [OP_BY_OP] and entry["disagrees_with"] == []
    # a harness report of before the CPU reference names op by op
    assert WrongResult().classify(recorded("jit_miscompare")).get("reference") == "op-by-op"


def test_platform_gpu_gives_jax_the_cpu_beside_a_default_gpu(tmp_path):
    box = Sandbox(tmp_path, platform="gpu")
    env = box.environment(tmp_path, Limits())
    assert (env["JAX_PLATFORMS"], env["JAX_PLATFORM_NAME"]) == ("cuda,cpu", "cuda")
    cpu_env = Sandbox(tmp_path).environment(tmp_path, Limits())
    assert (cpu_env["JAX_PLATFORMS"], cpu_env["JAX_PLATFORM_NAME"]) == ("cpu", "")
    if any(Path("/dev").glob("nvidia[0-9]*")):
        return
    # without a GPU: the CPU is there for the cross-check, and the default backend is refused
    probe = "import jax; print(jax.devices('cpu')[0].platform); jax.numpy.ones(1)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, JAX_PLATFORMS=env["JAX_PLATFORMS"],
                                   JAX_PLATFORM_NAME=env["JAX_PLATFORM_NAME"]))
    assert done.stdout == "cpu\n" and "RuntimeError: Unknown backend cuda" in done.stderr


@pytest.mark.skipif(any(Path("/dev").glob("nvidia[0-9]*")), reason="this machine has a GPU")
def test_check_on_gpu_without_a_gpu_is_refused_in_one_line():
    done = reducer_cli("check", PROGRAMS / "jit_miscompare.py", "--platform", "gpu", "--oracle", "wrong-result",
                       timeout=300)
    assert done.returncode == NO_BACKEND, done.stderr
    assert "JAX found no device for the requested platform (Unknown backend cuda" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_the_report_says_which_reference_a_wrong_result_disagrees_with():
    from oracles.outcome import Signature
    from reducer import bug_report

    def sig(reference):
        return Signature("wrong-result", (("source", "jit"), ("reference", reference), ("op", "dot_general"),
                                          ("program-exit", "AssertionError")))

    assert "op by op on the CPU; the first" in bug_report._what_happens(sig("cpu"))
    assert "run op by op and op by op on the CPU" in bug_report._what_happens(sig("op-by-op,cpu"))
    assert "returns op by op, within" in bug_report._expected(sig("op-by-op"))
    assert "on the CPU, within" in bug_report._expected(sig("cpu"))
