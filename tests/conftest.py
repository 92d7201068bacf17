"""Shared fixtures: paths to the project's own failing programs and their recorded outputs."""
import collections
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reducer.workers.sandbox import RunResult

TESTS = Path(__file__).resolve().parent
PROGRAMS = TESTS / "programs"
OUTPUTS = TESTS / "data" / "outputs"
GPU_OUTPUTS = TESTS / "data" / "gpu"
HAS_ENZYME = importlib.util.find_spec("enzyme_ad") is not None

needs_enzyme = pytest.mark.skipif(not HAS_ENZYME, reason="enzyme-ad is not installed")


def recorded(name: str) -> RunResult:
    """A real run of tests/programs/NAME.py, recorded by tests/data/record.py."""
    return RunResult(**json.loads((OUTPUTS / f"{name}.json").read_text()))


def run_text(source: str, folder: Path, timeout: float = 300) -> RunResult:
    """Run `source` as `candidate.py` in `folder` with this interpreter (a real subprocess), as a
    candidate runs; a run past `timeout` comes back timed out."""
    path = folder / "candidate.py"
    path.write_text(source)
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=folder)
    except subprocess.TimeoutExpired:
        return RunResult(None, "", "", time.monotonic() - started, timed_out=True)
    return RunResult(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def reducer_cli(*args, cwd=None, timeout=600, **kw) -> subprocess.CompletedProcess:
    """Run the `reducer` command as a user would (a real subprocess)."""
    return subprocess.run([sys.executable, "-m", "reducer.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def candidates_running(name: str, reducer_pid: int) -> list[int]:
    """The processes other than the reducer itself whose command line names `name` (its candidates)."""
    found = subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found if int(pid) != reducer_pid]


def wait_for_a_candidate(name: str, reducer_pid: int, timeout: float = 300) -> None:
    """Wait until a candidate of the reduction is seen running (so a later pgrep can see one); fail at
    once when the reduction has ended instead."""
    deadline = time.monotonic() + timeout
    while not candidates_running(name, reducer_pid):
        assert time.monotonic() < deadline, f"no candidate of {name} was ever seen running"
        assert not gone(reducer_pid), f"the reduction of {name} ended before a candidate was seen running"
        time.sleep(0.1)


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie no one has reaped yet counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] in ("Z", "X")
    except OSError:
        return True


def assert_gone_soon(pid: int, what: str, within: float = 30) -> None:
    """Assert that process `pid` ends within `within` seconds; kill it if it does not."""
    deadline = time.monotonic() + within
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert gone(pid), what
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def _shared_fixture(item) -> str | None:
    """The first fixture of the tests' own that `item` uses and that outlives one test (module or
    session scope): the tests that share it share one computation of it, e.g. one reduction."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            source = getattr(getattr(fixturedef, "func", None), "__code__", None)
            if (fixturedef.scope in ("module", "package", "session") and source is not None
                    and Path(source.co_filename).resolve().is_relative_to(TESTS)):
                return f"{fixturedef.baseid}::{name}"
    return None


def _group(item) -> str | None:
    """The pytest-xdist group `item` must run in, if any (see `pytest_collection_modifyitems`)."""
    shared = _shared_fixture(item)
    if shared:
        return shared
    if "ray" in item.name.split("[")[0].split("_"):
        return "ray"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n 2 --dist loadgroup`): the tests that share a module- or session-scoped
    fixture run on one worker, so that its reduction is made once, not once per worker; the tests
    that start a local Ray cluster run on one worker, one cluster at a time.

    The end-to-end reductions (`slow`) come first, groups before single tests: loadgroup hands out
    groups of the same size in collection order, so the long work starts early and the many short
    tests fill in at the end, and no worker is left alone with a long reduction while the other idles.
    The suites under tests/programs, which tests run with pytest and whose order they check, keep theirs."""
    members = collections.defaultdict(list)
    for item in items:
        group = _group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
        members[group or item.nodeid].append(item)
    if any(item.path.is_relative_to(PROGRAMS) for item in items):
        return
    order = {}  # a group's tests keep one place: a module-scoped fixture is set up once without xdist too
    for tests in members.values():
        fast = all(test.get_closest_marker("slow") is None for test in tests)
        order.update({test.nodeid: (fast, -len(tests)) for test in tests})
    items.sort(key=lambda item: order[item.nodeid])
