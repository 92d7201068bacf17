"""The long-lived runner: candidates one after another in one warm interpreter, each seeing a clean
state, with crashes, hangs and stray processes handled as for a child per candidate."""
import os
import subprocess
import sys
import threading
import time
import warnings

import pytest

from conftest import PROGRAMS
from reducer.workers import runner
from reducer.reduce import Options, Reduction
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
    assert hang.timed_out and time.monotonic() - start < 15
    assert box.run("print('after')\n").stdout == "after\n"


def test_processes_a_candidate_leaves_behind_are_killed(box, tmp_path):
    marker = tmp_path / "stray-alive"
    stray = f"import time; time.sleep(2); open({str(marker)!r}, 'w')"
    run = box.run(f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {stray!r}])\n")
    assert run.returncode == 0
    time.sleep(3)
    assert not marker.exists(), "a process started by a candidate outlived it in the runner"
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
    key = runner.reuse_key({"script": "p.py", "env": env})
    assert key == runner.reuse_key({"script": "p.py", "env": same})
    assert key != runner.reuse_key({"script": "p.py", "env": other})
    assert key != runner.reuse_key({"script": "q.py", "env": env})


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
        assert job._runner_misled(lost, est)
        assert not job._runner_misled(job.source, est)
        history = [job.source, job.source + "\n", job.source + "\n\n", lost, lost + "\n"]
        assert job._last_that_holds(history, est) == job.source + "\n\n"
        job.options.runner = "confirm"
        assert not test(lost, threading.Event())
        assert job.unconfirmed == 1
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
