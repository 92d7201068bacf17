"""The long-lived runner: candidates one after another in one warm interpreter, each seeing a clean
state, with crashes, hangs and stray processes handled as for a child per candidate."""
import os
import subprocess
import sys
import threading
import time
import warnings

import pytest

from conftest import PROGRAMS, assert_gone_soon
from reducer.workers import runner
from reducer.reduce import Options, Reduction
from reducer import second_look
from reducer.workers.sandbox import Limits, Sandbox

PID = "import os\nprint('pid', os.getpid())\n"


def warm_box(tmp_path, **kw):
    return Sandbox(tmp_path / "runs", script_name="prog.py", warm=True, warm_modules=("jax", "jax.numpy"), **kw)


def pid_of(run) -> int:
    return int(next(line.split()[1] for line in run.stdout.splitlines() if line.startswith("pid ")))


@pytest.fixture
def box(tmp_path):
    helper = tmp_path / "helper.py"
    helper.write_text("value = 'fresh'\n")
    sandbox = warm_box(tmp_path, data_files=(helper,))
    yield sandbox
    sandbox.close()


def test_candidates_share_one_runner_and_see_a_clean_state(box):
    first = box.run(PID + "import sys, os, warnings, jax, helper\n"
                    "jax.config.update('jax_enable_x64', True)\n"
                    "helper.value = 'changed'\nsys.path.append('/elsewhere')\nos.environ['LEFT_BEHIND'] = '1'\n"
                    "warnings.simplefilter('error')\nraise ValueError('first')\n")
    assert first.returncode == 1 and "ValueError: first" in first.stderr and first.reused
    second = box.run(PID + "import sys, os, warnings, jax.numpy as jnp, helper\n"
                     "print(jnp.ones(2).dtype, helper.value, '/elsewhere' in sys.path, 'LEFT_BEHIND' in os.environ)\n"
                     "warnings.warn('only a warning')\n")
    assert second.returncode == 0, second.stderr
    assert pid_of(first) == pid_of(second)
    assert "float32 fresh False False" in second.stdout
    assert "only a warning" in second.stderr
    assert not os.environ.get("LEFT_BEHIND")


def test_what_a_with_block_of_jax_options_leaves_behind_is_undone(box):
    """JAX 0.10.2 leaves its NaN check off for the thread after a `with jax.debug_nans(False):` block
    (the corpus's JAX bug): the next candidate must see it on where it turns it on."""
    nan = ("import jax, jax.numpy as jnp\njax.config.update('jax_debug_nans', True)\njnp.log(jnp.ones(1))\n"
           "{}try:\n    jnp.log(-jnp.ones(1))\nexcept FloatingPointError:\n    print('caught')\n"
           "else:\n    print('missed')\n")
    leaves = box.run(PID + nan.format("with jax.debug_nans(False):\n    pass\n"))
    assert "missed" in leaves.stdout, leaves.stderr  # the bug itself, in this process
    after = box.run(PID + nan.format(""))
    assert pid_of(leaves) == pid_of(after) and "caught" in after.stdout, after.stdout + after.stderr


def test_exit_codes_and_output_are_per_candidate(box):
    assert box.run("import sys\nprint('one')\nsys.exit(3)\n").returncode == 3
    run = box.run("print('two')\n")
    assert (run.returncode, run.stdout, run.stderr) == (0, "two\n", "")
    assert box.run("import sys\nsys.exit('a message')\n").stderr.strip() == "a message"


def test_a_crash_ends_the_runner_and_the_next_candidate_gets_a_new_one(box):
    before = pid_of(box.run(PID))
    crash = box.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert crash.returncode == -11
    after = box.run(PID)
    assert after.returncode == 0 and pid_of(after) != before


def test_a_hang_is_killed_and_the_next_candidate_still_runs(box):
    start = time.monotonic()
    hang = box.run("while True:\n    pass\n", Limits(timeout=2.0))
    assert hang.timed_out and time.monotonic() - start < 120
    assert box.run("print('after')\n").stdout == "after\n"


def test_processes_a_candidate_leaves_behind_are_killed(box, tmp_path):
    """A process a candidate started and left running (seen running first) is killed when it ends."""
    started = tmp_path / "stray.pid"
    stray = f"import os, time; open({str(started)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    run = box.run(f"import os, subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {stray!r}])\n"
                  f"while not (os.path.exists({str(started)!r}) and os.path.getsize({str(started)!r})):\n"
                  f"    time.sleep(0.05)\n", Limits(timeout=120))
    assert run.returncode == 0, run.stderr
    stray_pid = int(started.read_text())  # it ran: the candidate waited for its pid
    assert_gone_soon(stray_pid, "a process started by a candidate outlived it in the runner")
    assert box.run("print('next')\n").stdout == "next\n"


def test_isolated_runs_get_a_child_of_their_own(box):
    shared = pid_of(box.run(PID))
    alone = box.run(PID, isolated=True)
    assert not alone.reused and pid_of(alone) != shared
    assert pid_of(box.run(PID)) == shared


def test_what_the_runner_cannot_undo_shows_only_there(box):
    """Why interesting verdicts are confirmed in a child of their own: builtins are not reset."""
    box.run("import builtins\nbuiltins.poisoned = True\n")
    probe = "import builtins\nif getattr(builtins, 'poisoned', False):\n    raise RuntimeError('poisoned')\n"
    assert "poisoned" in box.run(probe).stderr
    assert box.run(probe, isolated=True).returncode == 0


def test_no_runner_means_a_child_per_candidate(tmp_path):
    sandbox = warm_box(tmp_path, reuse=False)
    try:
        first, second = sandbox.run(PID), sandbox.run(PID)
        assert not first.reused and pid_of(first) != pid_of(second)
    finally:
        sandbox.close()


def test_baseline_puts_back_config_modules_path_environment_and_filters(tmp_path):
    import jax

    base = runner.Baseline()
    local = tmp_path / "scratch"
    local.mkdir()
    (local / "candidate_local_mod.py").write_text("x = 1\n")
    sys.path.insert(0, str(local))
    try:
        import candidate_local_mod  # noqa: F401

        jax.config.update("jax_enable_x64", not base.config["jax_enable_x64"])
        os.environ["REDUCER_TEST_LEFTOVER"] = "1"
        warnings.simplefilter("ignore")
        assert base.restore(str(local))
        assert jax.config.values["jax_enable_x64"] == base.config["jax_enable_x64"]
        assert "candidate_local_mod" not in sys.modules
        assert str(local) not in sys.path
        assert "REDUCER_TEST_LEFTOVER" not in os.environ
        assert warnings.filters == base.filters
    finally:
        if str(local) in sys.path:
            sys.path.remove(str(local))
        os.environ.pop("REDUCER_TEST_LEFTOVER", None)


def test_runners_are_shared_only_between_like_candidates():
    env = {"HOME": "/a", "TMPDIR": "/a/tmp", "REDUCER_HARNESS_OUT": "/a/h.json", "JAX_PLATFORMS": "cpu"}
    same = dict(env, HOME="/b", TMPDIR="/b/tmp", REDUCER_HARNESS_OUT="/b/h.json")
    other = dict(env, JAX_PLATFORMS="cuda")
    key = runner.reuse_key({"request": {"kind": "script", "name": "p.py"}, "env": env})
    assert key == runner.reuse_key({"request": {"kind": "script", "name": "p.py"}, "env": same})
    assert key != runner.reuse_key({"request": {"kind": "script", "name": "p.py"}, "env": other})
    assert key == runner.reuse_key({"request": {"kind": "jaxpr", "spec": "{}"}, "env": same})


def test_a_result_that_holds_only_in_the_runner_is_caught_and_bisected(tmp_path):
    """tests/programs/hostile/runner_poison.py, once run in an interpreter, fails there on every later
    run: the runner's verdict on a candidate that lost the real cause is wrong, a child's is not."""
    job = Reduction(PROGRAMS / "hostile" / "runner_poison.py", tmp_path / "out",
                    Options(oracle="regex:BUG-7", jobs=1, runner="trust"))
    try:
        est = job.establish()  # three runs of the original, in one runner: now poisoned
        lost = ("import builtins\nbuiltins.reducer_poison_runs = getattr(builtins, 'reducer_poison_runs', 0) + 1\n"
                "if builtins.reducer_poison_runs > 1:\n    raise RuntimeError('BUG-7')\n")
        test = job.make_test(est)
        assert test(lost, threading.Event())
        assert second_look.runner_misled(job, lost, est)
        assert not second_look.runner_misled(job, job.source, est)
        history = [job.source, job.source + "\n", job.source + "\n\n", lost, lost + "\n"]
        assert second_look.last_that_holds(job, history, est) == job.source + "\n\n"
        assert test(lost, threading.Event())  # the test made before it goes on trusting the runner
        confirming = job.make_test(est, confirm=True)  # as the source level goes on after `restart`
        assert not confirming(lost, threading.Event())
        assert job.unconfirmed == 1
    finally:
        job.close()


def test_shrinking_stops_early_enough_for_the_result_s_second_look_in_a_child_of_its_own(tmp_path):
    from reducer import xla_culprit
    from reducer.data_literals import standalone

    for runner, look in (("trust", 1.5 * 10.0 + 2.0), ("confirm", 0.0)):  # confirmed already: no second look
        job = Reduction(PROGRAMS / "hostile" / "runner_poison.py", tmp_path / runner,
                        Options(oracle="regex:BUG-7", jobs=1, runner=runner, max_time=600))
        try:
            est = job.establish()
            job.latest_seconds = 10.0
            ends = standalone.deadline(job, est, 10.0) - xla_culprit.reserve(job, est, 10.0)
            assert job.shrink_until(est) == ends - look
        finally:
            job.close()


def test_a_runner_near_the_memory_limit_retires():
    probe = ("import resource\nfrom reducer.workers import runner\n"
             "size = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmSize:')) * 1024\n"
             "print(runner.near_memory_limit())\n"
             "resource.setrlimit(resource.RLIMIT_AS, (int(size * 1.5), resource.RLIM_INFINITY))\n"
             "print(runner.near_memory_limit())\n"
             "resource.setrlimit(resource.RLIMIT_AS, (int(size * 4), resource.RLIM_INFINITY))\n"
             "print(runner.near_memory_limit())\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True", "False"], done.stderr


# -- every level's candidates, one worker stack -----------------------------------------------------------
TINY_MODULE = ("module @tiny {\n  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
               "    %0 = stablehlo.add %a, %a : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n")


def traced(fun, *args) -> str:
    """The spec of `fun` traced on `args` (a `TracedProgram` candidate's payload)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from reducer.levels.jaxpr import program as jp
    from reducer.levels.jaxpr.codec import Encoder

    body = Encoder().closed(jax.make_jaxpr(fun)(*args))
    return jp.dumps({"transforms": [], "jaxpr": body,
                     "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.result_type(a))} for a in args]})


def endless(x):
    """A loop that never ends once XLA runs it (the value goes to inf, which stays above -1)."""
    from jax import lax

    return lax.while_loop(lambda v: v > -1.0, lambda v: v + 1.0, x)


def test_script_ir_and_traced_candidates_share_one_runner(box):
    from reducer.levels.jaxpr.worker import TracedProgram
    from reducer.levels.mlir.worker import IrModule

    double = traced(lambda x: x * 2.0, 1.0)  # before the first run: importing jax here sets variables
    first = box.run(PID)
    module = box.run(IrModule(TINY_MODULE, None, "xla"))
    spec = box.run(TracedProgram(double))
    assert (module.returncode, spec.returncode) == (0, 0), module.stderr + spec.stderr
    assert first.reused and module.reused and spec.reused
    broken = box.run(IrModule(TINY_MODULE.replace("stablehlo.add", "stablehlo.no_such_op"), None, "xla"))
    assert broken.returncode == 1 and "Traceback" in broken.stderr and "no_such_op" in broken.stderr
    assert pid_of(box.run(PID)) == pid_of(first)


def test_a_traced_candidate_that_never_ends_is_timed_out_cancelled_and_killed(box):
    from reducer.levels.jaxpr.worker import TracedProgram

    loop = TracedProgram(traced(endless, 0.0))
    start = time.monotonic()
    hung = box.run(loop, Limits(timeout=3.0))
    assert hung.timed_out and hung.returncode is None and time.monotonic() - start < 120
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    assert box.run(loop, Limits(timeout=600), cancel).cancelled
    threading.Timer(1.0, box.kill_all).start()  # what Ctrl-C does
    start = time.monotonic()
    killed = box.run(loop, Limits(timeout=600))
    assert killed.signal == 9 and time.monotonic() - start < 120  # killed, not timed out
    assert box.run(PID).returncode == 0


def test_requests_run_in_fresh_interpreters_and_in_runners_of_cold_sandboxes(tmp_path):
    """`--cold` is about scripts: another level's candidates still go to a runner (one that imports
    jax on its first candidate), and `fresh` runs one in a new interpreter."""
    from reducer.levels.jaxpr.worker import TracedProgram
    from reducer.levels.mlir.worker import IrModule

    sandbox = Sandbox(tmp_path / "runs", warm=False)
    try:
        warm = sandbox.run(IrModule(TINY_MODULE, None, "xla"))
        assert warm.returncode == 0 and warm.reused, warm.stderr
        assert not sandbox.run(PID).reused  # scripts: a fresh interpreter each
        fresh = sandbox.run(TracedProgram('{"not": "a spec"}'), fresh=True)
        assert fresh.returncode == 1 and "KeyError" in fresh.stderr and not fresh.reused
    finally:
        sandbox.close()


# -- a warm worker lends no module the candidate did not import ---------------------------------------------
ODE_WITHOUT_ITS_IMPORT = """import jax
import jax.numpy as jnp

print(jax.experimental.ode.odeint(lambda y, t: -y, jnp.ones(2), jnp.linspace(0.0, 1.0, 3)))
"""


@pytest.mark.slow
def test_a_submodule_used_without_its_import_fails_as_in_a_fresh_interpreter(tmp_path):
    """The real case: a reduced repro.py called jax.experimental.ode.odeint after a bare `import jax`;
    the worker had imported the submodule (the original imported it), so only a fresh interpreter
    showed the AttributeError."""
    from reducer.workers.imports import preload_modules

    original = "from jax.experimental.ode import odeint\n" + ODE_WITHOUT_ITS_IMPORT
    sandbox = Sandbox(tmp_path / "runs", script_name="repro.py", warm=True, warm_modules=preload_modules(original))
    try:
        assert "jax.experimental.ode" in sandbox.warm_modules
        assert sandbox.run(original).returncode == 0  # the runner has now run odeint itself
        fresh = sandbox.run(ODE_WITHOUT_ITS_IMPORT, fresh=True)
        for run in (sandbox.run(ODE_WITHOUT_ITS_IMPORT), sandbox.run(ODE_WITHOUT_ITS_IMPORT, isolated=True), fresh):
            assert run.returncode == 1, run.stdout
            assert "AttributeError: module 'jax.experimental' has no attribute 'ode'" in run.stderr, run.stderr[-2000:]
        again = sandbox.run("import jax.experimental.ode\n" + ODE_WITHOUT_ITS_IMPORT)
        assert again.returncode == 0 and again.reused, again.stderr[-2000:]
    finally:
        sandbox.close()


def test_what_a_candidate_imports_comes_back_whole_and_warm(box):
    """Modules taken away come back on import as the same objects, with the submodules their own
    loading imported bound as in a fresh interpreter, and without being executed again."""
    probe = ("import sys, jax\nprint('numpy' in vars(jax), 'linalg' in vars(jax.numpy), hasattr(jax, 'experimental'),"
             " id(jax), 'json.tool' in sys.modules)\n")
    first, second = box.run(probe), box.run("import json.tool\n" + probe)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split()[:3] == ["True", "True", "True"]
    assert first.stdout.split()[3] == second.stdout.split()[3]  # the same jax module: not loaded again
    assert box.run(probe).stdout.split()[4] == "False"  # json.tool, imported by the candidate before, is gone
