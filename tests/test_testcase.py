"""A failing test as input: node ids made into standalone scripts (reducer.readers.testcase), and reduced end to end."""
import ast
import subprocess
import sys
import textwrap

import pytest

from conftest import PROGRAMS, reducer_cli
from reducer import errors
from reducer.errors import ReducerError
from reducer.readers.inputs import read_input

SUITES = PROGRAMS / "suites"
PYTEST_SUITE = SUITES / "suite_model_pytest.py"
ABSL_SUITE = SUITES / "suite_model_absl.py"


def imported(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


def defined(source: str) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def names_in(source: str) -> set[str]:
    tree = ast.parse(source)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | defined(source)


def run_script(source: str, folder) -> subprocess.CompletedProcess:
    path = folder / "standalone.py"
    path.write_text(source)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=folder)


def test_pytest_function_becomes_a_script_that_fails_as_the_test_does(tmp_path):
    script, source = read_input(f"{PYTEST_SUITE}::test_step")
    assert script.parent == SUITES and script.suffix == ".py" and "::" not in script.name
    assert imported(source) == {"jax"}
    names = defined(source)
    assert {"rng", "batch", "weights", "test_step", "loss", "clipped_norm"} <= names
    assert not names & {"test_predict_shape", "test_loss_is_positive", "unused_table", "TestModel"}
    lines = source.splitlines()
    assert lines.index("rng = rng()") < lines.index("batch = batch(rng)") < lines.index("test_step(weights, batch)")
    assert "weights = next(weights())" in lines  # a yield fixture runs up to its yield
    done = run_script(source, tmp_path)
    assert done.returncode == 1 and "Reverse-mode differentiation does not work for lax.while_loop" in done.stderr


def test_absltest_method_becomes_set_up_and_body_at_module_level(tmp_path):
    _, source = read_input(f"{ABSL_SUITE}::ModelTest::test_clip_grad")
    assert imported(source) == {"unittest", "jax"}
    assert not defined(source) & {"ModelBase", "ModelTest", "test_forward", "test_width", "setUp"}
    lines = source.splitlines()
    assert lines.index("width = 4") < lines.index("self_x = jnp.ones((2, width))")  # setUpClass, then setUp
    assert "case = unittest.TestCase()" in lines and lines[-1] == "case.assertEqual(g.shape, self_w.shape)"
    done = run_script(source, tmp_path)
    assert done.returncode == 1 and "Custom VJP bwd rule must produce an output" in done.stderr


def test_a_test_that_needs_its_class_keeps_it_as_a_unittest_case(tmp_path):
    _, source = read_input(f"{ABSL_SUITE}::ModelTest::test_forward")  # calls self.forward(), a helper
    assert imported(source) == {"unittest", "jax"} and "class ModelBase(unittest.TestCase)" in source
    assert source.splitlines()[-4:] == ["ModelTest.setUpClass()", "test = ModelTest('test_forward')",
                                        "test.setUp()", "test.test_forward()"]
    assert run_script(source, tmp_path).returncode == 0


def test_absltest_helpers_keep_the_absl_base(tmp_path):
    _, source = read_input(f"{ABSL_SUITE}::ModelTest::test_width")  # uses self.assertLen, absltest's own
    assert "class ModelBase(absltest.TestCase)" in source and "absl" in imported(source)
    assert run_script(source, tmp_path).returncode == 0


@pytest.mark.slow
def test_pytest_class_with_setup_method_and_a_fixture_method(tmp_path):
    _, source = read_input(f"{PYTEST_SUITE}::TestModel::test_scaled")
    assert "test.setup_method(test.test_scaled)" in source and "doubled = test.doubled(weights)" in source
    assert "test_many" not in source and "pytest" not in imported(source)
    assert run_script(source, tmp_path).returncode == 0
    _, source = read_input(f"{PYTEST_SUITE}::TestModel::test_scale_is_set")  # no fixture method: no class
    assert "TestModel" not in defined(source) and source.splitlines()[-2:] == [
        "scale = 2.0", "assert scale * weights.sum() == 0.0"]
    assert run_script(source, tmp_path).returncode == 0


def write_suite(folder, text: str, conftest: str = ""):
    (folder / "pytest.ini").write_text("[pytest]\n")
    if conftest:
        (folder / "conftest.py").write_text(textwrap.dedent(conftest))
    path = folder / "test_it.py"
    path.write_text(textwrap.dedent(text))
    return path


def test_autouse_named_marked_and_builtin_fixtures(tmp_path):
    path = write_suite(tmp_path, """
        import pytest
        from pytest import fixture

        LOG = []

        @pytest.fixture(autouse=True)
        def always():
            LOG.append("always")

        @fixture(name="config")
        def make_config():
            return {"n": 3}

        @pytest.fixture
        def marker():
            LOG.append("marked")

        @pytest.mark.usefixtures("marker")
        def test_it(config, tmp_path, shared):
            (tmp_path / "x").write_text("1")
            assert LOG == ["always", "marked"] and config["n"] == 3 and shared == 7
            raise RuntimeError("reached the body")
        """, conftest="""
        import pytest

        SEVEN = 7

        @pytest.fixture
        def shared():
            return SEVEN

        def pytest_configure(config):
            pass
        """)
    _, source = read_input(f"{path}::test_it")
    assert "pytest" not in imported(source) and "pytest_configure" not in source
    assert "config = make_config()" in source and "tmp_path = pathlib.Path(tempfile.mkdtemp())" in source
    done = run_script(source, tmp_path)
    assert "RuntimeError: reached the body" in done.stderr, done.stderr


@pytest.mark.parametrize("node, status, words", [
    ("::test_missing", errors.NOT_FOUND, "test_it.py has no test test_missing (it has test_a, test_b, test_c)"),
    ("::Nope::test_a", errors.NOT_FOUND, "has no class Nope"),
    ("::test_a[1]", errors.USAGE, "parametrized test ids"),
    ("::", errors.USAGE, "FILE.py::test or FILE.py::Class::test"),
    ("::test_b", errors.USAGE, "fixture 'capfd' is not defined"),  # monkeypatch, capsys … have stand-ins
    ("::test_c", errors.USAGE, "cycle: one -> two -> one"),
])
def test_bad_node_ids_are_one_line_errors(tmp_path, node, status, words):
    path = write_suite(tmp_path, """
        import pytest

        @pytest.fixture
        def one(two):
            return two

        @pytest.fixture
        def two(one):
            return one

        def test_a():
            pass

        def test_b(capfd):
            pass

        def test_c(one):
            pass
        """)
    with pytest.raises(ReducerError) as caught:
        read_input(f"{path}{node}")
    assert caught.value.status == status and words in str(caught.value) and "\n" not in str(caught.value)


def test_cli_node_id_errors_are_one_line(tmp_path):
    done = reducer_cli("reduce", f"{PYTEST_SUITE}::test_nope", "--out", tmp_path / "out", timeout=120)
    assert done.returncode == errors.NOT_FOUND and "Traceback" not in done.stderr
    assert "has no test test_nope" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = reducer_cli("check", f"{tmp_path / 'absent.py'}::test_a", timeout=120)
    assert done.returncode == 2 and "no such file" in done.stderr and "Traceback" not in done.stderr


def check_reduced(out, needle: str) -> str:
    repro = (out / "repro.py").read_text()
    assert not imported(repro) & {"pytest", "absl", "_pytest"}
    assert "verified" in (out / "reduce.log").read_text()
    done = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, timeout=300,
                          cwd=out)
    assert done.returncode != 0 and needle in done.stderr
    return repro


@pytest.mark.slow
def test_reduce_a_failing_pytest_test_end_to_end(tmp_path):
    out = tmp_path / "out"
    done = reducer_cli("reduce", f"{PYTEST_SUITE}::test_step", "--out", out, "--max-time", "120", "--quiet",
                       "--jobs", "2", "--runs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    repro = check_reduced(out, "Reverse-mode differentiation does not work for lax.while_loop")
    assert not names_in(repro) & {"batch", "weights", "test_step"}


@pytest.mark.slow
def test_reduce_a_failing_absltest_method_end_to_end(tmp_path):
    out = tmp_path / "out"
    done = reducer_cli("reduce", f"{ABSL_SUITE}::ModelTest::test_clip_grad", "--out", out, "--max-time", "120",
                       "--quiet", "--jobs", "2", "--runs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    repro = check_reduced(out, "Custom VJP bwd rule must produce an output")
    assert not names_in(repro) & {"setUp", "ModelTest", "case"} and "unittest" not in imported(repro)


#: a test that fails only after the test before it in its module, as pytest runs them: the decorator
#: `jax.debug_nans(False)` leaves JAX's NaN check off for the thread when it ends (JAX 0.10.2's bug)
AFTER_EARLIER = textwrap.dedent('''\
    import jax
    import jax.numpy as jnp
    import pytest

    jax.config.update("jax_debug_nans", True)
    nll = jax.jit(jnp.log)


    @pytest.fixture
    def target():
        return -1.0


    @jax.debug_nans(False)
    def test_missing_targets_propagate_nan():
        assert jnp.isnan(nll(jnp.nan))


    def test_needs_another_fixture(tmp_path):
        assert tmp_path.exists()


    def test_invalid_targets_raise(target):
        with pytest.raises(FloatingPointError):
            nll(target)
    ''')


def test_a_test_runs_after_the_tests_before_it_in_its_module_where_asked(tmp_path):
    path = tmp_path / "test_head.py"
    path.write_text(AFTER_EARLIER)
    _, alone = read_input(f"{path}::test_invalid_targets_raise")
    assert "test_missing_targets_propagate_nan" not in alone
    assert run_script(alone, tmp_path).returncode == 0  # passes alone, as `pytest FILE::test` does
    _, after = read_input(f"{path}::test_invalid_targets_raise", after_earlier=True)
    assert "@jax.debug_nans(False)" in after and "test_missing_targets_propagate_nan()" in after
    assert "test_needs_another_fixture" not in after  # asks for a fixture the test does not
    lines = after.splitlines()
    assert lines.index("target = target()") < lines.index("    test_missing_targets_propagate_nan()") \
        < lines.index("test_invalid_targets_raise(target)")
    done = run_script(after, tmp_path)
    assert done.returncode == 1 and "DID NOT RAISE FloatingPointError" in done.stderr, done.stderr


@pytest.mark.slow
def test_a_test_that_fails_only_after_the_tests_before_it_is_reduced_after_them(tmp_path):
    """End to end: the node id passes alone; the reduction goes on after the tests before it, keeps
    the one that leaves JAX's NaN check off, holds candidates to that check, and files it with JAX."""
    path = tmp_path / "test_head.py"
    path.write_text(AFTER_EARLIER)
    done = reducer_cli("reduce", f"{path}::test_invalid_targets_raise", "--out", tmp_path / "out", "--max-time",
                       "240", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "out" / "reduce.log").read_text()
    assert "the test passes alone and fails after the tests before it in its module" in log
    assert "run through with JAX's NaN check made on every call" in log
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "debug_nans(False)" in repro and "pytest.raises(FloatingPointError)" in repro, repro
    assert "file with JAX" in done.stderr, done.stderr


def test_a_test_reduced_after_the_tests_before_it_is_resumed_so(tmp_path):
    """--resume of such a reduction: the job made from the test alone says it was reduced after them
    (the CLI makes it again so), and the job made with them resumes; another version is refused."""
    import hashlib
    import json

    from reducer import earlier_tests
    from reducer.errors import FailsAfterEarlierTests
    from reducer.reduce import Options, Reduction

    path = tmp_path / "test_head.py"
    path.write_text(AFTER_EARLIER)
    node, out = f"{path}::test_invalid_targets_raise", tmp_path / "out"
    out.mkdir()
    after = Reduction(node, out, Options(jobs=1), resume=True, after_earlier=True)
    try:
        state = {"script_sha1": hashlib.sha1(after.source.encode()).hexdigest(), "oracle": "own-check",
                 "signature": {"family": "own-check", "fields": {"type": "Failed"}}, "best": "best.py"}
    finally:
        after.close()
    (out / "state.json").write_text(json.dumps(state))
    (out / "best.py").write_text(after.source)
    alone = Reduction(node, out, Options(jobs=1), resume=True)
    try:
        assert "with_earlier" not in vars(alone)  # made only when asked: it may ask pytest to collect
        with pytest.raises(FailsAfterEarlierTests, match="reduced after the tests before it"):
            alone.resume_from()
    finally:
        alone.close()
    alone_sha1 = hashlib.sha1(alone.source.encode()).hexdigest()
    (out / "state.json").write_text(json.dumps({**state, "script_sha1": alone_sha1}))
    alone = Reduction(node, out, Options(jobs=1), resume=True)
    try:
        earlier_tests.check_resumed(alone, alone_sha1)
        assert "with_earlier" not in vars(alone)  # made from the test alone: nothing else to make
    finally:
        alone.close()
    (out / "state.json").write_text(json.dumps({**state, "script_sha1": "0" * 40}))
    alone = Reduction(node, out, Options(jobs=1), resume=True)
    try:
        with pytest.raises(ReducerError, match="another version") as raised:
            alone.resume_from()
        assert raised.value.status == errors.NO_RESUME
    finally:
        alone.close()
