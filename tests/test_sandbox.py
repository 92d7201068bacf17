"""Running candidates: real processes that hang, fork, crash, flood output or eat memory."""
import os
import signal
import threading
import time

import pytest

from conftest import assert_gone_soon, gone
from reducer.workers.sandbox import Limits, Sandbox


@pytest.fixture
def box(tmp_path):
    """Makes sandboxes (cold unless asked) that are closed, with their workers, after the test."""
    made = []

    def make(**kw):
        made.append(Sandbox(tmp_path / "runs", script_name="prog.py", **kw))
        return made[-1]

    yield make
    for sandbox in made:
        sandbox.close()


def test_plain_run_sees_itself_as_main_in_a_scratch_folder(tmp_path, box):
    run = box().run("import os, sys\nprint(__name__, sys.argv[0], os.getcwd() == os.environ['HOME'])\n")
    assert run.returncode == 0
    assert run.stdout.strip() == "__main__ prog.py True"


def test_scratch_folders_are_removed(tmp_path, box):
    sandbox = box()
    sandbox.run("open('junk.txt', 'w').write('x')\n")
    sandbox.close()  # removal happens off the candidate's path; closing waits for it
    assert list((tmp_path / "runs").iterdir()) == []


def test_timeout_kills_the_whole_process_group(tmp_path, box):
    """A candidate that times out is killed with the child it started (seen running first)."""
    started = tmp_path / "child.pid"
    child = f"import os, time; open({str(started)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    src = (f"import os, subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {child!r}])\n"
           f"while not (os.path.exists({str(started)!r}) and os.path.getsize({str(started)!r})):\n"
           f"    time.sleep(0.05)\nprint('child started', flush=True)\ntime.sleep(600)\n")
    start = time.monotonic()
    run = box().run(src, Limits(timeout=5.0))
    assert run.timed_out and run.returncode is None
    assert time.monotonic() - start < 120  # not the 600 s the candidate asked for
    assert "child started" in run.stdout and started.read_text(), "the child never started: nothing was checked"
    child_pid = int(started.read_text())
    assert_gone_soon(child_pid, "a child outlived its candidate")


def test_signal_death_is_reported(tmp_path, box):
    run = box().run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert run.signal == signal.SIGSEGV
    assert "Fatal Python error" in run.stderr  # faulthandler is on in candidates


def test_endless_output_is_capped(tmp_path, box):
    run = box().run("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
                            Limits(timeout=60, output_mb=4))
    assert run.signal == signal.SIGXFSZ or run.truncated
    assert len(run.stdout) < 2 * 1024 * 1024


def test_memory_limit_stops_runaway_allocation(tmp_path, box):
    src = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))\n"
    run = box().run(src, Limits(timeout=60, memory_mb=512))
    assert run.returncode != 0 and "MemoryError" in run.stderr


def test_cancel_stops_a_run_early(tmp_path, box):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    start = time.monotonic()
    run = box().run("import time\ntime.sleep(600)\n", Limits(timeout=900), cancel)
    assert run.cancelled and time.monotonic() - start < 120  # not the 600 s it asked for


def test_data_files_are_copied_not_shared(tmp_path, box):
    data = tmp_path / "weights.txt"
    data.write_text("original")
    run = box(data_files=(data,)).run(
        "print(open('weights.txt').read())\nopen('weights.txt', 'w').write('clobbered')\n")
    assert run.stdout.strip() == "original"
    assert data.read_text() == "original"


def test_settings_do_not_change_under_a_run_and_replace_makes_another_with_the_same_workers(tmp_path, box):
    """A run's settings are a value: changing one in place fails; `replace` gives a sandbox with its
    own settings whose candidates run through the same warm workers, the first left as it was."""
    import dataclasses

    (tmp_path / "input.txt").write_text("read beside the candidate")
    first = box(warm=True, extra_env={"WHO": "first"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.data_files = (tmp_path / "input.txt",)
    with pytest.raises(TypeError):
        first.extra_env["WHO"] = "changed"
    second = first.replace(data_files=(tmp_path / "input.txt",), extra_env={"WHO": "second"})
    program = "import os\nprint(os.environ['WHO'], os.path.exists('input.txt'))\n"
    assert second.run(program).stdout.split() == ["second", "True"]
    assert first.run(program).stdout.split() == ["first", "False"]
    assert second.pool is first.pool and first.data_files == () and first.extra_env == {"WHO": "first"}
    second.close()  # closing one closes the workers they share
    assert first.pool.closed and not first.pool.idle


def test_home_and_tmpdir_are_private(tmp_path, box):
    run = box().run("import os, tempfile\nprint(os.environ['HOME'] in tempfile.gettempdir())\n")
    assert run.stdout.strip() == "True"
    assert os.environ.get("HOME") != str(tmp_path / "runs")


def test_no_warm_candidate_outlives_a_killed_reduction(tmp_path):
    """A reduction killed with SIGKILL leaves neither its fork server nor an endless candidate."""
    import subprocess
    import sys

    marker = tmp_path / "candidate.pid"
    src = f"import os\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n"
    client = (f"import sys\nfrom pathlib import Path\nfrom reducer.workers.sandbox import Limits, Sandbox\n"
              f"Sandbox(Path({str(tmp_path / 'runs')!r}), script_name='prog.py', warm=True)"
              f".run({src!r}, Limits(timeout=600))\n")
    proc = subprocess.Popen([sys.executable, "-c", client])
    deadline = time.monotonic() + 120
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    candidate = int(marker.read_text())
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while not gone(candidate) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gone(candidate), "an endless candidate kept running after its reduction was killed"


def test_scratch_folders_of_dead_processes_are_swept_and_no_others(tmp_path):
    """A run killed before it could clean up leaves its folder; the next run's sweep removes it,
    never a folder a living process holds, nor one that `scratch.folder` did not make."""
    import subprocess
    import sys

    from reducer.workers import scratch

    make = "import os\nfrom reducer.workers import scratch\nprint(scratch.folder(), flush=True)\n"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", make + "os._exit(0)\n"], capture_output=True, text=True, env=env)
    held = subprocess.Popen([sys.executable, "-c", make + "import time\ntime.sleep(60)\n"], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        alive = held.stdout.readline().strip()
        foreign = tmp_path / "reducer-not-ours"
        foreign.mkdir()
        assert not scratch.Path(dead.stdout.strip()).exists()  # the next run (`held`) swept it
        assert scratch.sweep(str(tmp_path)) == []
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([scratch.Path(alive).name, foreign.name])
    finally:
        held.kill()
        held.wait()
    assert scratch.sweep(str(tmp_path)) == [scratch.Path(alive)]
