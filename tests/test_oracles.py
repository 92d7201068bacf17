"""Oracles on real outputs: runs of tests/programs recorded by tests/data/record.py, and GPU texts."""
import dataclasses

import pytest

import oracles
from conftest import GPU_OUTPUTS, recorded
from oracles.activity_mismatch import ActivityMismatch
from oracles.adjoint_missing import AdjointMissing, enzyme_ops
from oracles.base import Signature, final_exception, normalize_message
from oracles.crash import Crash
from oracles.generic import Regex, Script
from reducer.workers.sandbox import RunResult


@pytest.mark.parametrize("name, family, fields", [
    ("reduce_precision_enzyme", "adjoint-missing", {"source": "enzyme", "op": "stablehlo.reduce_precision"}),
    ("top_k_enzyme", "adjoint-missing", {"source": "enzyme", "op": "chlo.top_k"}),
    ("while_loop_grad", "adjoint-missing", {"source": "jax", "op": "while_loop", "rule": "reverse"}),
    ("custom_vjp_wrong_arity", "activity-mismatch", {"source": "jax", "kind": "custom_vjp-structure"}),
    ("digamma_mismatch", "activity-mismatch", {"kind": "numeric", "program-compares": "yes"}),
    ("nonlinear_jvp", "crash", {"how": "internal-error",
                                "detail": "AssertionError in jax/_src/interpreters/ad.py:fancy_bilinear_transpose"}),
    ("segfault", "crash", {"how": "signal", "detail": "SIGSEGV in ctypes/__init__.py:string_at"}),
])
def test_auto_recognises_each_family(name, family, fields):
    oracle, sig = oracles.detect(recorded(name))
    assert sig.family == family
    for key, value in fields.items():
        assert sig.get(key) == value
    assert oracle.judge(sig, recorded(name))[0]


@pytest.mark.parametrize("name", ["clean", "plain_error", "needs_stdin", "needs_args", "liar"])
def test_nothing_recognised(name):
    assert oracles.detect(recorded(name)) is None


def test_program_message_alone_is_not_evidence():
    # liar.py raises the very message digamma_mismatch.py raises, but its gradients agree
    liar, real = recorded("liar"), recorded("digamma_mismatch")
    assert "gradient mismatch between Enzyme-JAX and JAX" in liar.output
    sig = ActivityMismatch().classify(real)
    assert not ActivityMismatch().judge(sig, liar)[0]
    assert all(not c.get("mismatch") for c in liar.harness["checks"])


def test_numeric_mismatch_needs_both_gradients_when_the_original_compared():
    real = recorded("digamma_mismatch")
    sig = ActivityMismatch().classify(real)
    only_enzyme = dataclasses.replace(real, harness={**real.harness, "gradients": {"enzyme": 1, "plain": 0}})
    assert not ActivityMismatch().judge(sig, only_enzyme)[0]


def test_enzyme_signature_keeps_first_op_and_accepts_supersets():
    text = ('could not compute the adjoint for this operation %53 = "stablehlo.custom_call"(%50) '
            '<{call_target_name = "lapack_strsm_ffi"}>\n'
            'could not compute the adjoint for this operation %47:2 = "stablehlo.custom_call"(%46) '
            '<{call_target_name = "lapack_spotrf_ffi"}>\n')
    run = RunResult(1, "", "ValueError: INTERNAL: Failed to parse pipeline\n" + text, 1.0)
    sig = AdjointMissing().classify(run)
    assert sig.get("target") == "lapack_spotrf_ffi"
    only_potrf = RunResult(1, "", text.splitlines()[1], 1.0)
    only_trsm = RunResult(1, "", text.splitlines()[0], 1.0)
    assert AdjointMissing().judge(sig, only_potrf)[0]
    assert not AdjointMissing().judge(sig, only_trsm)[0]
    assert [op[2] for op in enzyme_ops(text)] == ["lapack_strsm_ffi", "lapack_spotrf_ffi"]


def test_other_family_is_not_the_same_failure():
    sig = oracles.detect(recorded("top_k_enzyme"))[1]
    assert not AdjointMissing().judge(sig, recorded("reduce_precision_enzyme"))[0]
    assert not AdjointMissing().judge(sig, recorded("while_loop_grad"))[0]


def gpu_run(name):
    return RunResult(1, "", (GPU_OUTPUTS / f"{name}.txt").read_text(), 1.0)


@pytest.mark.parametrize("name, how, detail", [
    ("illegal_address_a", "cuda", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("oom_a", "xla-status", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes."),
    ("ptxas_a", "cuda", "ptxas fatal"),
])
def test_gpu_failures(name, how, detail):
    sig = Crash("gpu").classify(gpu_run(name))
    assert (sig.get("platform"), sig.get("how"), sig.get("detail")) == ("gpu", how, detail)


@pytest.mark.parametrize("a, b", [("illegal_address_a", "illegal_address_b"), ("oom_a", "oom_b")])
def test_gpu_signatures_survive_reduction_noise(a, b):
    crash = Crash("gpu")
    assert crash.judge(crash.classify(gpu_run(a)), gpu_run(b))[0]


def test_no_gpu_is_not_a_crash():
    assert Crash("gpu").classify(gpu_run("unavailable")) is None


def test_signals_and_hangs():
    segv = RunResult(-11, "", "Fatal Python error: Segmentation fault\n", 1.0)
    assert Crash().classify(segv).get("detail").startswith("SIGSEGV")
    abort = RunResult(-6, "", "", 1.0)
    assert Crash().classify(abort).get("detail").startswith("SIGABRT")
    hang = RunResult(None, "", "", 9.0, timed_out=True)
    assert Crash().classify(hang) is None
    assert Crash(hangs=True).classify(hang).get("how") == "hang"


def test_user_errors_are_not_internal_errors():
    assert Crash().classify(recorded("plain_error")) is None


def test_regex_and_bad_regex():
    sig = Regex(r"top_k").classify(recorded("top_k_enzyme"))
    assert sig is not None and sig.family == "regex"
    assert Regex(r"nothing-like-this").classify(recorded("top_k_enzyme")) is None
    with pytest.raises(ValueError):
        Regex("(")


def test_script_oracle_follows_exit_zero_is_interesting(tmp_path):
    check = tmp_path / "check.sh"
    check.write_text('#!/bin/sh\ngrep -q top_k "$1"\n')
    check.chmod(0o755)
    script = Script(str(check))
    assert script.interesting("jax.lax.top_k(x, 2)\n", "a.py")[0]
    assert not script.interesting("jax.lax.sort(x)\n", "a.py")[0]


def test_make_oracle_names():
    assert oracles.make_oracle("auto") is None
    assert isinstance(oracles.make_oracle("crash", "gpu"), Crash)
    with pytest.raises(ValueError, match="unknown oracle"):
        oracles.make_oracle("nonsense")


def test_signature_round_trip_and_helpers():
    sig = oracles.detect(recorded("top_k_enzyme"))[1]
    assert Signature.from_dict(sig.to_dict()) == sig
    assert final_exception(recorded("plain_error").output) == ("KeyError", "'no such thing'")
    assert normalize_message("allocate 1234 bytes at 0xdeadbeef for f32[3,4]") == "allocate N bytes at 0x_ for <aval>"
