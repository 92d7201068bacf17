"""Oracles on real outputs: runs of tests/programs recorded by tests/data/record.py, and GPU texts."""
import dataclasses

import pytest

import oracles
from conftest import GPU_OUTPUTS, OUTPUTS, PROGRAMS, needs_enzyme, recorded
from oracles.activity_mismatch import ActivityMismatch
from oracles.adjoint_missing import AdjointMissing, enzyme_ops
from oracles import kinds
from oracles.base import Signature, crashing_frame, entered_library_call, final_exception, normalize_message
from oracles.crash import Crash
from oracles.generic import Regex, Script
from oracles.jax_error import JaxError
from oracles.jax_error import normalise as jax_error_normalise
from oracles.pipeline_error import PipelineError
from oracles.pipeline_error import normalise as pipeline_normalise
from oracles.wrong_result import WrongResult
from reducer.workers.command import runner_for
from reducer.workers.sandbox import Limits, RunResult, Sandbox


@pytest.mark.parametrize("name, family, fields", [
    ("reduce_precision_enzyme", "adjoint-missing", {"source": "enzyme", "op": "stablehlo.reduce_precision"}),
    ("top_k_enzyme", "adjoint-missing", {"source": "enzyme", "op": "chlo.top_k"}),
    ("while_loop_grad", "adjoint-missing", {"source": "jax", "op": "while_loop", "rule": "reverse"}),
    ("custom_vjp_wrong_arity", "activity-mismatch", {"source": "jax", "kind": "custom_vjp-structure"}),
    ("digamma_mismatch", "activity-mismatch", {"kind": "numeric", "program-compares": "yes", "op": "digamma"}),
    ("stop_gradient_mismatch", "activity-mismatch", {"kind": "numeric", "op": "stop_gradient"}),
    ("nonlinear_jvp", "crash", {"how": "internal-error",
                                "detail": "AssertionError in jax/_src/interpreters/ad.py:fancy_bilinear_transpose"}),
    ("segfault", "crash", {"how": "signal", "detail": "SIGSEGV in ctypes/__init__.py:string_at"}),
    ("rank7_sum_segfault", "crash", {"how": "signal", "detail": "SIGSEGV in jax/_src/interpreters/pxla.py:__call__"}),
    ("median_enzyme_segfault", "crash",
     {"how": "signal", "detail": "SIGSEGV in enzyme_ad/jax/primitives.py:_enzyme_primal_lowering"}),
    ("enzyme_complex_conj", "pipeline-error", {"op": "complex.conj", "message": (
        "<type> op operand #N must be complex type with floating-point elements, but got <type>")}),
    ("enzyme_while_trip_count", "pipeline-error", {"op": "WhileOp"}),
    ("eig_grad", "adjoint-missing", {"source": "jax", "op": "eig", "rule": "jvp"}),
    ("jit_miscompare", "wrong-result", {"op": "reduce_sum", "program-exit": "jit and eager results differ"}),
    ("leaked_tracer", "jax-error", {"type": "UnexpectedTracerError", "raised-in": "jax/_src/core.py:check_eval_args"}),
    ("tracer_to_numpy", "jax-error", {"type": "TracerArrayConversionError", "raised-in": "jax/_src/core.py:__array__"}),
    ("traced_size", "jax-error", {"type": "ConcretizationTypeError",
                                  "raised-in": "jax/_src/core.py:concrete_or_error"}),
    ("odeint_bad_args", "jax-error", {"type": "TypeError", "raised-in": "jax/experimental/ode.py:odeint",
                                      "message": "The contents of odeint *args must be arrays or scalars, "
                                                 "but got <value>"}),
    ("sharded_searchsorted", "jax-error", {"type": "ValueError", "entered": "jax/_src/numpy/lax_numpy.py:searchsorted"}),
    ("own_bad_sharding", "jax-error", {"type": "ValueError", "entered": "jax/_src/named_sharding.py:check_pspec"}),
    # the program's own raise and exits: its own check, never the family its message names
    ("plain_error", "own-check", {"type": "KeyError", "check": "raise", "message": "'no such thing'"}),
    ("liar", "own-check", {"type": "SystemExit", "check": "exit",
                           "message": "gradient mismatch between Enzyme-JAX and JAX"}),
    ("jit_results_liar", "own-check", {"type": "SystemExit", "check": "exit",
                                       "message": "jit and eager results differ"}),
])
def test_auto_recognises_each_family(name, family, fields):
    oracle, sig = oracles.detect(recorded(name))
    assert sig.family == family
    for key, value in fields.items():
        assert sig.get(key) == value
    assert oracle.judge(sig, recorded(name))[0]


@pytest.mark.parametrize("name", ["clean", "needs_stdin", "needs_args", "sort_enzyme_forward"])
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
    command = runner_for(script)
    assert script.classify(command.run("jax.lax.top_k(x, 2)\n", "a.py")) is not None
    assert script.classify(command.run("jax.lax.sort(x)\n", "a.py")) is None
    assert runner_for(Regex("x")) is None and runner_for(None) is None  # the others run in the sandbox


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


def test_the_two_wrong_gradient_bugs_name_different_operations():
    digamma = ActivityMismatch().classify(recorded("digamma_mismatch"))
    stop = ActivityMismatch().classify(recorded("stop_gradient_mismatch"))
    assert (digamma.get("op"), stop.get("op")) == ("digamma", "stop_gradient")
    assert not ActivityMismatch().judge(digamma, recorded("stop_gradient_mismatch"))[0]


def test_forward_only_enzyme_program_gets_no_check_of_its_own():
    """An Enzyme-JAX function called forward only is no wrong gradient, no missing adjoint, no failure."""
    run = recorded("sort_enzyme_forward")
    assert run.returncode == 0 and run.harness["checks"] == [] and "Pipeline" not in run.output
    assert run.harness["gradients"] == {"enzyme": 0, "plain": 0}
    assert oracles.detect(run) is None
    for oracle in (ActivityMismatch(), AdjointMissing(), Crash(), PipelineError(), WrongResult(), JaxError()):
        assert oracle.classify(run) is None, oracle
    wrong_gradient = ActivityMismatch().classify(recorded("digamma_mismatch"))
    assert not ActivityMismatch().judge(wrong_gradient, run)[0]
    missing = AdjointMissing().classify(recorded("top_k_enzyme"))
    assert not AdjointMissing().judge(missing, run)[0]


@needs_enzyme
def test_the_forward_only_recording_is_what_a_run_gives_today(tmp_path):
    """The recording above, made again through the real sandbox and harness: still no check, no failure."""
    box = Sandbox(tmp_path / "runs", script_name="sort_enzyme_forward.py", check_gradients=True)
    try:
        run = box.run((PROGRAMS / "sort_enzyme_forward.py").read_text(), Limits(timeout=300))
    finally:
        box.close()
    old = recorded("sort_enzyme_forward")
    assert (run.returncode, run.harness["checks"], run.harness["gradients"]) == (
        old.returncode, old.harness["checks"], old.harness["gradients"]), run.output
    assert run.stdout == old.stdout and oracles.detect(run) is None


def test_every_recorded_run_is_judged_here():
    """Each recording in tests/data/outputs is either recognised or shown to be nothing (above)."""
    params = {mark.args[0]: mark.args[1] for test in (test_auto_recognises_each_family, test_nothing_recognised)
              for mark in test.pytestmark if mark.name == "parametrize"}
    judged = {case[0] for case in params["name, family, fields"]} | set(params["name"])
    assert judged == {path.stem for path in OUTPUTS.glob("*.json")}


def test_wrong_result_verdict_is_the_harness_comparison():
    real, liar = recorded("jit_miscompare"), recorded("jit_results_liar")
    sig = WrongResult().classify(real)
    worst = real.harness["results"][0]
    assert worst["mismatch"] and worst["jit"] != worst["eager"] and worst["rtol"] == 1e-4
    assert WrongResult().classify(liar) is None  # says the results differ; the harness saw them agree
    assert not WrongResult().judge(sig, liar)[0]
    clean_exit = dataclasses.replace(real, returncode=0)
    assert WrongResult().classify(clean_exit) is None  # a program that does not fail has nothing to reduce


def test_a_check_that_dies_is_not_the_programs_failure():
    # the program ended cleanly; the harness then died during its own checks
    run = dataclasses.replace(recorded("clean"), returncode=-11,
                              harness={"program": {"exit": 0}, "checking": True, "checks": []})
    assert Crash().classify(run) is None
    assert oracles.detect(run) is None
    died_in_program = dataclasses.replace(run, harness={})
    assert Crash().classify(died_in_program).get("how") == "signal"


def test_crashing_frame_reads_the_crashing_thread_and_skips_the_tool():
    native = ("Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\n"
              '  File "/work/main/reducer/workers/runner.py", line 60 in restore\n'
              '  File "/x/site-packages/jax/_src/api.py", line 1 in clean_up\n')
    assert crashing_frame(native) == "<native thread>"
    tool_only = ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
                 '  File "/work/main/reducer/harness.py", line 135 in run_program\n'
                 '  File "<frozen runpy>", line 88 in _run_code\n')
    assert crashing_frame(tool_only) == "<no Python frame>"
    other_thread = native.replace("Thread 0x00007f", "Current thread 0x00007e (most recent call first):\n"
                                  '  File "/x/site-packages/jaxlib/xla_client.py", line 5 in run\n\nThread 0x00007f')
    assert crashing_frame(other_thread) == "jaxlib/xla_client.py:run"
    only_this_thread = ("Fatal Python error: Segmentation fault\n\nStack (most recent call first):\n"
                        '  File "/x/site-packages/jaxlib/mlir/ir.py", line 9 in parse\n')
    assert crashing_frame(only_this_thread) == "jaxlib/mlir/ir.py:parse"  # faulthandler with all_threads=False


def test_message_normalisation_of_the_new_families():
    assert jax_error_normalise("must be arrays or scalars, but got decay.") == "must be arrays or scalars, but got <value>"
    assert pipeline_normalise("'stablehlo.add' op operand %12 has type 'tensor<3xf32>'") == "<type> op operand %v has type <type>"


def test_a_jax_error_is_held_to_the_call_the_program_made():
    """JAX's `jnp.searchsorted` failing on a sharded query raises what the program's own bad
    `NamedSharding` raises (type, frame, message): the library call the program entered tells them
    apart; a signature recorded before it (a corpus case's) is held only to what it names."""
    jax_fault, own_mistake = recorded("sharded_searchsorted"), recorded("own_bad_sharding")
    oracle, sig = oracles.detect(jax_fault)
    mistake = oracle.classify(own_mistake)
    assert sig.get("entered") == "jax/_src/numpy/lax_numpy.py:searchsorted"
    assert mistake.get("entered") == "jax/_src/named_sharding.py:check_pspec"
    assert [f for f in sig.fields if f[0] != "entered"] == [f for f in mistake.fields if f[0] != "entered"]
    assert oracle.judge(sig, jax_fault)[0] and not oracle.judge(sig, own_mistake)[0]
    older = dataclasses.replace(sig, fields=tuple(f for f in sig.fields if f[0] != "entered"))
    assert oracle.judge(older, jax_fault)[0] and oracle.judge(older, own_mistake)[0]
    assert kinds.identical(older, sig) and kinds.identical(sig, older) and not kinds.identical(sig, mistake)



def test_two_own_checks_failing_alike_are_not_one_bug():
    """`assert_allclose` failing on `gammainc` and on `hyp2f1` reads the same: the corpus keeps both."""
    check = Signature("own-check", (("type", "AssertionError"), ("check", "assert_allclose"), ("reads", "close"),
                                    ("message", "Not equal to tolerance rtol=N, atol=N")))
    assert not kinds.identical(check, check)
    assert kinds.identical(recorded_signature("leaked_tracer"), recorded_signature("leaked_tracer"))


def recorded_signature(name):
    return oracles.detect(recorded(name))[1]


def test_the_call_entered_passes_over_jax_s_machinery_and_other_packages():
    def traceback(*frames):
        return "Traceback (most recent call last):\n" + "".join(
            f'  File "{path}", line 1, in {func}\n' for path, func in frames) + "ValueError: x\n"
    site = "/v/lib/python3.11/site-packages/"
    program = ("/home/me/train.py", "step")
    jit = [(site + "jax/_src/traceback_util.py", "reraise_with_filtered_traceback"), (site + "jax/_src/pjit.py", "cache_miss")]
    assert entered_library_call(traceback(program, *jit, (site + "jax/_src/numpy/ufuncs.py", "log"),
                                          (site + "jax/_src/core.py", "bind"))) == "jax/_src/numpy/ufuncs.py:log"
    # the program's function traced by `jit` is where the program last ran: what it called is what counts
    assert entered_library_call(traceback(program, *jit, ("/home/me/train.py", "loss"), (site + "scipy/x.py", "f"),
                                          (site + "jax/_src/lax/lax.py", "clamp"))) == "jax/_src/lax/lax.py:clamp"
    assert entered_library_call(traceback(program, *jit)) == "jax/_src/traceback_util.py:reraise_with_filtered_traceback"
    assert entered_library_call(traceback(program)) is None
    assert entered_library_call(traceback((site + "jax/_src/api.py", "grad_f"))) is None


def test_new_oracle_names():
    for name, cls in (("wrong-result", WrongResult), ("jax-error", JaxError), ("pipeline-error", PipelineError)):
        assert isinstance(oracles.make_oracle(name), cls)
    assert list(oracles.FAMILIES)[-2:] == ["jax-error", "own-check"]  # tried last by auto, the program's own last


# -- titles in the failure's own words ---------------------------------------------------------------
def test_a_title_quotes_the_message_a_person_would_read():
    from oracles.base import first_clause
    from oracles.outcome import RunResult

    out = ("Traceback (most recent call last):\n"
           '  File "repro.py", line 3, in <module>\n'
           '  File "/x/site-packages/jax/_src/interpreters/mlir.py", line 290, in _ir_constant\n'
           "TypeError: No constant handler for type: <class 'jax._src.interpreters.partial_eval.DynamicJaxprTracer'>\n")
    sig = JaxError().classify(RunResult(1, "", out, 1.0))
    assert sig.title == "JAX: `TypeError` in `_ir_constant`: No constant handler for type: `DynamicJaxprTracer`"
    assert "<q>" in sig.get("message")  # the identity keeps what reducing may change out
    assert first_clause("Mul scatter requires adjoint. This is currently unsupported") == "Mul scatter requires adjoint"
    long = first_clause("word " * 40, limit=30)
    assert long.endswith(" …") and len(long) <= 32 and "wor …" not in long


def test_a_title_with_other_values_is_the_same_failure():
    """Titles quote values a candidate may change; the identity is the family and the fields."""
    a = Signature("pipeline-error", (("source", "enzyme"), ("message", "number of output elements (N)")),
                  "Enzyme-JAX: the pass pipeline fails: number of output elements (1)")
    b = dataclasses.replace(a, title="Enzyme-JAX: the pass pipeline fails: number of output elements (3)")
    assert a == b and hash(a) == hash(b) and oracles.make_oracle("pipeline-error").same(a, b)
    assert a != dataclasses.replace(a, fields=(("source", "enzyme"), ("message", "another")))


def test_a_crash_title_says_what_jax_was_doing_not_its_frame():
    from oracles.crash import doing
    from oracles.outcome import RunResult

    out = ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n"
           '  File "/x/site-packages/jax/_src/interpreters/pxla.py", line 1297 in __call__\n'
           '  File "repro.py", line 2 in <module>\n')
    sig = Crash("cpu").classify(RunResult(-11, "", out, 1.0))
    assert sig.title == "SIGSEGV on cpu while a compiled (`jit`) function runs", sig.title
    assert sig.get("detail") == "SIGSEGV in jax/_src/interpreters/pxla.py:__call__"  # the identity keeps the frame
    assert doing("jax/_src/compiler.py:backend_compile_and_load") == "while XLA compiles a `jit` function"
    assert doing("enzyme_ad/jax/primitives.py:_enzyme_primal") == "in `enzyme_ad/jax/primitives.py:_enzyme_primal`"
