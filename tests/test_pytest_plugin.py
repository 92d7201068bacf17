"""`pytest --reduce` (reducer/pytest_plugin.py): real pytest runs in a subprocess. The fast tests
replace the reduction by a stand-in (a conftest that sets `run_reducer`) and check what the plugin
asks of reducer and what it says; the slow one runs the real reductions on
tests/programs/plugin_suite (a plain failing test and a parametrized one with a failing case)."""
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

from conftest import PROGRAMS
from reducer import pytest_plugin as plugin

ROOT = Path(__file__).resolve().parents[1]
SUITE = PROGRAMS / "plugin_suite"
INSTALLED = any(ep.value == "reducer.pytest_plugin"
                for ep in importlib.metadata.entry_points(group="pytest11", name="reducer"))

FAILING = textwrap.dedent("""
    import pytest


    @pytest.fixture
    def broken():
        raise RuntimeError("the fixture breaks")


    def test_fails():
        assert 1 == 2


    @pytest.mark.parametrize("n", [1, 2])
    def test_param(n):
        assert n == 1


    def test_setup_error(broken):
        pass


    def test_passes():
        pass
""")

#: a stand-in for the reduction: it logs the command and answers as `reducer reduce --json` would
STAND_IN = textwrap.dedent("""
    import json
    import os
    from pathlib import Path

    import reducer.pytest_plugin as plugin


    def fake(cmd, cwd, limit):
        with open(os.environ["FAKE_LOG"], "a") as fh:
            fh.write(json.dumps({"cmd": cmd, "cwd": str(cwd), "limit": limit}) + "\\n")
        node, out = cmd[4], Path(cmd[cmd.index("--out") + 1])
        if "setup_error" in node:
            return 6, "", "reducer: test_fake.py: does not fail: nothing to reduce\\n"
        out.mkdir(parents=True, exist_ok=True)
        (out / "repro.py").write_text("raise SystemExit(1)\\n")
        (out / "report.md").write_text("# report\\n")
        summary = {"out": str(out), "size": {"unit": "tokens", "from": 40, "to": 7}, "status": 0, "verified": "yes",
                   "signature": {"family": "jax-error", "fields": {"type": "AssertionError"}, "title": ""}}
        return 0, json.dumps(summary) + "\\n", '{"event": "accept"}\\n'


    plugin.run_reducer = fake
""")


def pytest_args(*args, autoload: bool = False) -> tuple[list[str], dict]:
    """A pytest command line that loads the plugin, and its environment: through the installed entry
    point with `autoload` (it must be installed), else with plugin autoloading off and `-p`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTEST_XDIST"))}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        cmd += ["-p", "reducer.pytest_plugin"]
    return cmd + list(args), env


def run_pytest(folder: Path, *args, autoload: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd, env = pytest_args(*args, autoload=autoload)
    env["FAKE_LOG"] = str(folder / "fake.log")
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def fake_suite(tmp_path: Path, stand_in: bool = True) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_fake.py").write_text(FAILING)
    if stand_in:
        (folder / "conftest.py").write_text(STAND_IN)
    return folder


def logged(folder: Path) -> list[dict]:
    log = folder / "fake.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def section(stdout: str) -> list[str]:
    """The lines of the "reducer" summary section (empty when there is none)."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ reducer =+", line)]
    if not starts:
        return []
    rest = lines[starts[0] + 1:]
    end = next((i for i, line in enumerate(rest) if line.startswith("=====")), len(rest))
    return [line for line in rest[:end] if line.strip()]


def summary_lines(stdout: str) -> list[str]:
    lines = section(stdout)
    after = next(i for i, line in enumerate(lines) if "reducer: one line per failing test" in line)
    return lines[after + 1:]


# -- pure functions -------------------------------------------------------------------------------

@pytest.mark.parametrize("node_id, name", [
    ("test_ops.py::test_grad[running_lse]", "test_ops.py__test_grad[running_lse]"),
    ("tests/test_model.py::TestModel::test_step", "tests_test_model.py__TestModel__test_step"),
    ("test_x.py::test_y[a/b c-1.5]", "test_x.py__test_y[a_b_c-1.5]"),
    ("../up.py::test_z[é]", "_up.py__test_z[_]"),
])
def test_folder_names_are_safe_and_readable(node_id, name):
    assert plugin.safe_name(node_id) == name


def test_a_long_node_id_is_cut_with_a_hash():
    long_id = "test_long.py::test_case[" + "x" * 300 + "]"
    name = plugin.safe_name(long_id)
    assert len(name) == plugin.MAX_NAME and name.startswith("test_long.py__test_case[xxx")
    assert plugin.safe_name(long_id + "y") != name


def test_outcome_lines():
    summary = {"size": {"unit": "tokens", "from": 83, "to": 22}, "status": 0, "verified": "yes",
               "signature": {"family": "jax-error", "fields": {"type": "TracerBoolConversionError"}}}
    assert plugin.outcome_line(summary, "", 0, 17.2) == (
        True, "reduced 83 -> 22 tokens in 17 s, jax-error: type=TracerBoolConversionError")
    ok, line = plugin.outcome_line(dict(summary, verified="no (0/3 runs)"), "", 14, 5)
    assert not ok and line.startswith("not reduced to a verified reproducer (exit 14; verified: no (0/3 runs)); "
                                      "best so far 83 -> 22 tokens")
    stderr = '{"event": "accept"}\nreducer: t.py::test_x[a]: parametrized test ids ([...]) are not supported\n'
    assert plugin.outcome_line(None, stderr, 2, 1) == (
        False, "not reduced in 1 s: t.py::test_x[a]: parametrized test ids ([...]) are not supported")
    assert plugin.outcome_line(None, "", -9, 1)[1] == "not reduced in 1 s: reducer exited with status -9"
    assert plugin.json_summary('{"event": 1}\nnoise\n{"out": "x", "status": 0}\n') == {"out": "x", "status": 0}


def test_the_command_is_the_real_cli():
    cmd = plugin.command("t.py::test_a[1]", Path("/o/t"), 90.0, None)
    assert cmd[:4] == [sys.executable, "-m", "reducer.cli", "reduce"]
    assert cmd[4:] == ["t.py::test_a[1]", "--out", "/o/t", "--max-time", "90", "--quiet", "--json"]
    assert plugin.command("t.py::t", Path("o"), None, "jax-error")[-4:] == ["--oracle", "jax-error", "--quiet",
                                                                          "--json"]


def test_the_entry_point_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"reducer": "reducer.pytest_plugin"}
    assert project["project"]["scripts"]["reducer"] == "reducer.cli:app"


# -- pytest runs with a stand-in reduction ------------------------------------------------------------

def test_without_reduce_nothing_happens(tmp_path):
    folder = fake_suite(tmp_path)
    done = run_pytest(folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 2 passed, 1 error" in done.stdout
    assert section(done.stdout) == [] and "reducing" not in done.stdout
    assert logged(folder) == [] and not (folder / "reduced").exists()


def test_every_failure_is_reduced_and_listed(tmp_path):
    folder = fake_suite(tmp_path)
    done = run_pytest(folder, "--reduce", "--reduce-max-time", "7", "--reduce-oracle", "jax-error",
                      "--reduce-dir", "out")
    assert done.returncode == 1, done.stdout + done.stderr  # the run's own status is kept
    calls = logged(folder)
    nodes = [c["cmd"][4] for c in calls]
    assert nodes == ["test_fake.py::test_fails", "test_fake.py::test_param[2]", "test_fake.py::test_setup_error"]
    for call in calls:
        cmd = call["cmd"]
        assert cmd[1:4] == ["-m", "reducer.cli", "reduce"] and Path(call["cwd"]) == folder
        assert cmd[cmd.index("--max-time") + 1] == "7" and cmd[cmd.index("--oracle") + 1] == "jax-error"
        assert cmd[-2:] == ["--quiet", "--json"] and call["limit"] == 7 + plugin.GRACE
    assert Path(calls[1]["cmd"][6]) == folder / "out" / "test_fake.py__test_param[2]"
    lines = summary_lines(done.stdout)
    assert lines == [
        "test_fake.py::test_fails: reduced 40 -> 7 tokens in 0 s, jax-error: type=AssertionError  "
        "-> out/test_fake.py__test_fails/",
        "test_fake.py::test_param[2]: reduced 40 -> 7 tokens in 0 s, jax-error: type=AssertionError  "
        "-> out/test_fake.py__test_param[2]/",
        "test_fake.py::test_setup_error: not reduced in 0 s: test_fake.py: does not fail: nothing to reduce",
    ], done.stdout
    assert (folder / "out" / "test_fake.py__test_param[2]" / "repro.py").is_file()
    assert not (folder / "out" / "test_fake.py__test_setup_error").exists()


def test_defaults_and_settings_from_pyproject(tmp_path):
    folder = fake_suite(tmp_path)
    (folder / "test_fake.py").write_text("def test_fails():\n    assert 1 == 2\n")
    done = run_pytest(folder, "--reduce")
    cmd = logged(folder)[0]["cmd"]
    assert cmd[cmd.index("--max-time") + 1] == "300" and "--oracle" not in cmd, done.stdout
    assert Path(cmd[6]) == folder / "reduced" / "test_fake.py__test_fails"
    # [tool.reducer] max-time: the reduction reads it itself (not overridden), and the plugin allows for it
    (folder / "pyproject.toml").write_text('[tool.reducer]\nmax-time = 11\noracle = "jax-error"\n')
    (folder / "fake.log").unlink()
    done = run_pytest(folder, "--reduce")
    call = logged(folder)[0]
    assert "--max-time" not in call["cmd"] and "--oracle" not in call["cmd"] and call["limit"] == 11 + plugin.GRACE
    # an explicit --reduce-max-time wins over it
    (folder / "fake.log").unlink()
    run_pytest(folder, "--reduce", "--reduce-max-time", "5")
    cmd = logged(folder)[0]["cmd"]
    assert cmd[cmd.index("--max-time") + 1] == "5"


def test_no_failures_says_so(tmp_path):
    folder = fake_suite(tmp_path)
    (folder / "test_fake.py").write_text("def test_passes():\n    pass\n")
    done = run_pytest(folder, "--reduce")
    assert done.returncode == 0 and section(done.stdout) == ["no failing tests to reduce"], done.stdout


def test_under_xdist_only_the_controller_reduces(tmp_path):
    folder = fake_suite(tmp_path)
    done = run_pytest(folder, "-p", "xdist.plugin", "-n", "2", "--reduce")
    assert done.returncode == 1, done.stdout + done.stderr
    assert sorted(c["cmd"][4] for c in logged(folder)) == [
        "test_fake.py::test_fails", "test_fake.py::test_param[2]", "test_fake.py::test_setup_error"]
    assert len(summary_lines(done.stdout)) == 3


def test_teardown_failures_and_interrupted_runs_are_listed_not_reduced(tmp_path):
    folder = fake_suite(tmp_path)
    (folder / "test_fake.py").write_text(textwrap.dedent("""
        import pytest


        @pytest.fixture
        def leaves_a_mess():
            yield
            raise RuntimeError("teardown breaks")


        def test_teardown(leaves_a_mess):
            pass
    """))
    done = run_pytest(folder, "--reduce")
    assert logged(folder) == [] and summary_lines(done.stdout) == [
        "test_fake.py::test_teardown: not reduced: it failed in a fixture's teardown, which a standalone test "
        "does not run"], done.stdout
    (folder / "test_fake.py").write_text("def test_fails():\n    assert 0\n\n\ndef test_stop():\n"
                                         "    raise KeyboardInterrupt\n")
    done = run_pytest(folder, "--reduce")
    assert done.returncode == 2 and logged(folder) == [], done.stdout
    assert summary_lines(done.stdout) == ["test_fake.py::test_fails: not reduced: interrupted"], done.stdout


@pytest.mark.skipif(not INSTALLED, reason="the pytest11 entry point is not installed (pip install -e .)")
def test_the_installed_plugin_loads_and_can_be_turned_off(tmp_path):
    folder = fake_suite(tmp_path)
    done = run_pytest(folder, "--reduce", autoload=True)
    assert len(logged(folder)) == 3 and len(summary_lines(done.stdout)) == 3, done.stdout + done.stderr
    off = run_pytest(folder, "-p", "no:reducer", "--reduce", autoload=True)
    assert off.returncode == 4 and "--reduce" in off.stderr  # unrecognized: the plugin is off
    plain = run_pytest(folder, "-p", "no:reducer", autoload=True)
    assert plain.returncode == 1 and section(plain.stdout) == [] and len(logged(folder)) == 3
    # with xdist's workers loading it from the entry point too: the controller alone reduces, once per test
    spread = run_pytest(folder, "-n", "2", "--reduce", autoload=True)
    assert len(logged(folder)) == 6 and len(summary_lines(spread.stdout)) == 3, spread.stdout + spread.stderr


# -- the real reductions ----------------------------------------------------------------------------

@pytest.mark.slow
def test_pytest_reduce_reduces_each_failing_test(tmp_path):
    folder = tmp_path / "plugin_suite"
    shutil.copytree(SUITE, folder)
    start = time.monotonic()
    done = run_pytest(folder, "--reduce", "--reduce-max-time", "90", autoload=INSTALLED, timeout=900)
    seconds = time.monotonic() - start
    assert done.returncode == 1, done.stdout + done.stderr
    lines = summary_lines(done.stdout)
    assert len(lines) == 2, done.stdout
    names = ["test_suite.py__test_clip_under_jit", "test_suite.py__test_norm_is_finite[-1]"]
    for line, name in zip(lines, names):
        assert line.startswith(name.replace("__", "::", 1) + ": reduced ") and line.endswith(f"-> reduced/{name}/"), \
            done.stdout
    assert "TracerBoolConversionError" in lines[0] and "nonfinite" in lines[1]
    for name in names:
        out = folder / "reduced" / name
        assert (out / "repro.py").is_file() and (out / "report.md").is_file(), sorted(os.listdir(folder / "reduced"))
        # the suite's [tool.reducer] (runs = 1) reached the reduction through the CLI
        assert "of 1 runs" in (out / "reduce.log").read_text()
    print(f"pytest --reduce on the plugin suite: {seconds:.0f} s")


@pytest.mark.slow
def test_a_fixture_error_is_reduced_too(tmp_path):
    folder = tmp_path / "fixture_error"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[tool.reducer]\njobs = 1\nruns = 1\n")
    (folder / "test_fixture.py").write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp
        import pytest


        @pytest.fixture
        def scale():
            x = jnp.float32(3.0)
            return jax.jit(lambda v: v if v > 0 else -v)(x)


        def test_scaled(scale):
            assert scale * 2 == 6
    """))
    done = run_pytest(folder, "--reduce", "--reduce-max-time", "60", autoload=INSTALLED, timeout=600)
    assert done.returncode == 1 and "1 error" in done.stdout, done.stdout + done.stderr
    [line] = summary_lines(done.stdout)
    assert line.startswith("test_fixture.py::test_scaled: reduced ") and "TracerBoolConversionError" in line
    assert (folder / "reduced" / "test_fixture.py__test_scaled" / "repro.py").is_file()
