"""One case of a parametrized test as input: the node id pytest or absltest prints (`FILE.py::test_x[case]`,
`FILE.py::Class::test_x_case`) made into a standalone script that runs that case alone and fails as it does."""
import ast
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import HAS_ENZYME, PROGRAMS, reducer_cli
from oracles.base import final_exception, normalize_message
from reducer import errors
from reducer.errors import ReducerError
from reducer.readers.inputs import read_input

PARAMS = PROGRAMS / "suites" / "params"
PYTEST_SUITE = PARAMS / "suite_ops_pytest.py"
ABSL_SUITE = PARAMS / "suite_ops_absl.py"

# every case of the two suites, in the order pytest collects them: True where the case fails
PYTEST_CASES = {
    "test_grad_is_finite[centered]": False,
    "test_grad_is_finite[running_lse]": True,  # Enzyme-JAX: no reverse rule for reduce_window
    "test_grad_is_finite[softplus]": False,
    "test_grad_is_finite[swish]": False,
    "test_softmax_is_finite[1.0-float32]": False,  # stacked marks: the one nearest the function first
    "test_softmax_is_finite[1.0-float16]": False,
    "test_softmax_is_finite[10.0-float32]": False,
    "test_softmax_is_finite[10.0-float16]": True,
    "test_norm_along_first_axis[matrix]": False,  # ids=[...]
    "test_norm_along_first_axis[vector]": False,
    "test_norm_along_first_axis[scalar]": True,
    "test_halving[1-0.5]": False,  # "steps, expected", pytest.param(..., id=..., marks=...)
    "test_halving[underflow]": False,
    "test_halving[three]": False,
    "test_halving[forty]": False,
    "test_peak_is_positive[four]": False,  # indirect=True
    "test_peak_is_positive[empty]": True,
    "test_activation_at_zero[RELU]": False,  # a fixture's params=, ids=str.upper
    "test_activation_at_zero[SIGMOID]": True,
    "test_activation_at_zero[SILU]": False,
    "test_roundtrip[.npy]": False,  # tmp_path, monkeypatch, capsys
    "test_roundtrip[.txt]": True,
    "TestClip::test_clip_in_range[0.0-1.0]": False,  # a class, ("lo", "hi")
    "TestClip::test_clip_in_range[-1.0-1.0]": False,
    "TestClip::test_clip_in_range[1.0-0.0]": True,
}
ABSL_CASES = {
    "OpsTest::test_bounded_hard_tanh": True,  # named_parameters(*[computed list])
    "OpsTest::test_bounded_relu6": False,
    "OpsTest::test_bounded_sigmoid": False,
    "OpsTest::test_logsumexp_finite0": False,  # product
    "OpsTest::test_logsumexp_finite1": False,
    "OpsTest::test_logsumexp_finite2": False,
    "OpsTest::test_logsumexp_finite3": True,
    "OpsTest::test_monotone_cumsum": True,  # named_parameters, tuples and a dict
    "OpsTest::test_monotone_running_lse": False,
    "OpsTest::test_monotone_running_max": False,
    "OpsTest::test_split_halves0": False,  # parameters, tuples
    "OpsTest::test_split_halves1": False,
    "OpsTest::test_split_halves2": True,
    "OpsTest::test_sum_shape0": False,  # parameters, dicts, a default
    "OpsTest::test_sum_shape1": False,
    "OpsTest::test_sum_shape2": True,
}
NEEDS_ENZYME = {"test_grad_is_finite[running_lse]"}


def imported(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


def run_script(source: str, folder) -> subprocess.CompletedProcess:
    path = folder / "standalone.py"
    path.write_text(source)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=folder,
                          stdin=subprocess.DEVNULL)


def collected(suite) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
                           str(suite)], capture_output=True, text=True, timeout=300, cwd=suite.parent)
    return [line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def under_pytest(tmp_path_factory):
    """How each case of the two suites ends under pytest itself: None, or its final exception."""
    report = tmp_path_factory.mktemp("junit") / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--assert=plain",
                    "--tb=native", f"--junitxml={report}", str(PYTEST_SUITE), str(ABSL_SUITE)],
                   capture_output=True, text=True, timeout=600, cwd=PARAMS)
    ends = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        owner = case.get("classname").split(".")[-1]
        node = case.get("name") if owner.startswith("suite_") else f"{owner}::{case.get('name')}"
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        ends[node] = None if failure is None else final_exception(failure.text or "")
    return ends


def test_the_ids_are_the_ones_pytest_prints():
    assert collected(PYTEST_SUITE) == list(PYTEST_CASES)
    assert collected(ABSL_SUITE) == list(ABSL_CASES)
    # and the methods absl's parameterized makes, in the order it makes them
    done = subprocess.run([sys.executable, "-c", "import suite_ops_absl as m; print(*[n for n in vars(m.OpsTest) "
                           "if n.startswith('test')])"], capture_output=True, text=True, timeout=300, cwd=PARAMS)
    made = done.stdout.split()
    assert sorted(made) == [n.split("::")[1] for n in ABSL_CASES], done.stderr
    assert made[:3] == ["test_monotone_running_lse", "test_monotone_running_max", "test_monotone_cumsum"]


# 41 scripts, each in an interpreter of its own, and the suites once under pytest: a quarter of the fast
# tier's time, so they run with the end-to-end tests (`.ci/run` runs both)
@pytest.mark.slow
@pytest.mark.parametrize("suite, node, fails", [(PYTEST_SUITE, n, f) for n, f in PYTEST_CASES.items()] +
                         [(ABSL_SUITE, n, f) for n, f in ABSL_CASES.items()], ids=lambda v: getattr(v, "name", v))
def test_each_case_runs_alone_and_ends_as_under_pytest(suite, node, fails, under_pytest, tmp_path):
    if node in NEEDS_ENZYME and not HAS_ENZYME:
        pytest.skip("enzyme-ad is not installed")
    _, source = read_input(f"{suite}::{node}")
    assert not imported(source) & {"pytest", "_pytest", "absl"}
    done = run_script(source, tmp_path)
    expected = under_pytest[node]
    assert (expected is not None) == fails, f"under pytest: {expected}"
    if not fails:
        assert done.returncode == 0, done.stderr[-3000:]
        return
    assert done.returncode == 1, done.stderr[-3000:]
    got = final_exception(done.stderr)
    assert got is not None and got[0] == expected[0], (got, expected)
    assert normalize_message(got[1]) == normalize_message(expected[1]), (got, expected)


def source_of(node: str) -> str:
    return read_input(node)[1]


def test_values_are_bound_as_variables_at_the_top_of_the_body():
    source = source_of(f"{PYTEST_SUITE}::test_norm_along_first_axis[scalar]")
    assert "def test_norm_along_first_axis(key):\n    shape = ()\n" in source
    assert source.splitlines()[-1] == "test_norm_along_first_axis(key)"
    assert "matrix" not in source and "(2, 3)" not in source and "parametrize" not in source
    source = source_of(f"{PYTEST_SUITE}::test_halving[underflow]")
    assert "    steps = 200\n    expected = 2.0 ** (-200)\n" in source and "slow" not in source
    source = source_of(f"{PYTEST_SUITE}::TestClip::test_clip_in_range[1.0-0.0]")  # a class taken apart
    assert source.splitlines()[-4:-2] == ["lo = 1.0", "hi = 0.0"] and "class TestClip" not in source


def test_a_computed_list_of_values_is_indexed():
    source = source_of(f"{PYTEST_SUITE}::test_grad_is_finite[running_lse]")  # parametrize("name", sorted(OPS))
    assert "    name = sorted(OPS)[1]\n" in source
    source = source_of(f"{PYTEST_SUITE}::test_softmax_is_finite[10.0-float16]")  # stacked on a computed list
    assert "def test_softmax_is_finite(key):\n    scale = 10.0\n    dtype = list(DTYPES)[1]\n" in source
    source = source_of(f"{ABSL_SUITE}::OpsTest::test_bounded_hard_tanh")  # named_parameters(*[... BOUNDS ...])
    assert "fn = [(name, fn, bound) for name, (fn, bound) in sorted(BOUNDS.items())][0][1]" in source


def test_parametrized_fixtures_take_their_value_in_place_of_request_param():
    source = source_of(f"{PYTEST_SUITE}::test_peak_is_positive[empty]")  # indirect=True
    assert "def signal():\n    n = 0\n" in source and "request" not in source
    source = source_of(f"{PYTEST_SUITE}::test_activation_at_zero[SIGMOID]")  # params=[...], ids=str.upper
    assert "def activation():\n    return getattr(jax.nn, 'sigmoid')\n" in source


def test_absltest_cases_become_module_level_code():
    source = source_of(f"{ABSL_SUITE}::OpsTest::test_sum_shape1")  # {"axis": -1}: size keeps its default
    assert source.splitlines()[-3:] == ["axis = -1", "size = 8",
                                        "case.assertEqual(jnp.sum(self_x[:, None], axis=axis).shape, (size,))"]
    source = source_of(f"{ABSL_SUITE}::OpsTest::test_monotone_running_max")  # dict(testcase_name=...)
    assert "op = running_max\nscale = 2.0\n" in source
    source = source_of(f"{ABSL_SUITE}::OpsTest::test_logsumexp_finite3")  # product: dtype, then scale
    assert "dtype = 'float16'\nscale = 10.0\n" in source and imported(source) == {"unittest", "jax"}


@pytest.mark.parametrize("node, status, words", [
    ("test_softmax_is_finite[2.0-float16]", errors.NOT_FOUND,
     "no such case of the test (it has [1.0-float32], [1.0-float16], [10.0-float32], [10.0-float16])"),
    ("test_grad_is_finite[tanh]", errors.NOT_FOUND,
     "(it has [centered], [running_lse], [softplus], [swish])"),
    ("test_halving", errors.USAGE, "a parametrized test: give one of its cases, test_halving[1-0.5] "
                                   "(it has [1-0.5], [underflow], [three], [forty])"),
    ("test_halving[three", errors.USAGE, "FILE.py::test[case]"),
    ("TestClip::test_clip_in_range[0-1]", errors.NOT_FOUND, "[0.0-1.0], [-1.0-1.0], [1.0-0.0]"),
])
def test_unknown_cases_are_one_line_errors_naming_the_ones_there_are(node, status, words):
    with pytest.raises(ReducerError) as caught:
        read_input(f"{PYTEST_SUITE}::{node}")
    assert caught.value.status == status and words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("node, status, words", [
    ("OpsTest::test_split_halves3", errors.NOT_FOUND, "test_monotone_running_lse, test_monotone_running_max"),
    ("OpsTest::test_split_halves", errors.USAGE,
     "give one of the methods absltest makes of it, OpsTest::test_split_halves0, OpsTest::test_split_halves1"),
])
def test_absltest_names_that_do_not_exist_are_one_line_errors(node, status, words):
    with pytest.raises(ReducerError) as caught:
        read_input(f"{ABSL_SUITE}::{node}")
    assert caught.value.status == status and words in str(caught.value) and "\n" not in str(caught.value)


def write_suite(folder, text: str, conftest: str = ""):
    (folder / "pytest.ini").write_text("[pytest]\n")
    if conftest:
        (folder / "conftest.py").write_text(textwrap.dedent(conftest))
    path = folder / "test_it.py"
    path.write_text(textwrap.dedent(text))
    return path


def test_stand_ins_for_monkeypatch_and_capsys(tmp_path):
    path = write_suite(tmp_path, """
        import os
        import json
        import pytest

        SETTINGS = {"mode": "fast"}

        @pytest.fixture
        def home(tmp_path, monkeypatch):
            monkeypatch.setenv("APP_HOME", str(tmp_path))
            monkeypatch.delenv("APP_DEBUG", raising=False)
            return tmp_path

        @pytest.mark.parametrize("mode, width", [("slow", 2), ("exact", 3)])
        def test_it(mode, width, home, monkeypatch, capsys, tmpdir):
            monkeypatch.setitem(SETTINGS, "mode", mode)
            monkeypatch.setattr(json, "dumps", lambda v: "patched")
            monkeypatch.setattr("os.path.sep", "|")
            print(json.dumps(SETTINGS), os.environ["APP_HOME"] == str(home), os.path.sep)
            print("warn", file=__import__("sys").stderr)
            out, err = capsys.readouterr()
            assert (out, err) == ("patched True |\\n", "warn\\n") and capsys.readouterr().out == ""
            assert "APP_DEBUG" not in os.environ and SETTINGS["mode"] == mode and tmpdir.exists()
            print("after")
            assert width == 2, f"width {width}"
        """)
    script = source_of(f"{path}::test_it[slow-2]")
    assert "pytest" not in imported(script) and "class MonkeyPatch" in script and "class CaptureFixture" in script
    done = run_script(script, tmp_path)
    assert done.returncode == 0, done.stderr
    done = run_script(source_of(f"{path}::test_it[exact-3]"), tmp_path)
    assert done.returncode == 1 and done.stderr.rstrip().endswith("AssertionError: width 3"), done.stderr
    assert done.stdout == "patched True |\nafter\n"  # written through while captured, as pytest shows it


def test_ids_pytest_makes_of_values_and_of_equal_values(tmp_path):
    path = write_suite(tmp_path, """
        import pytest

        @pytest.fixture(params=[10, 20], ids=["ten", "twenty"])
        def base(request):
            return request.param

        @pytest.fixture
        def doubled(request, base):
            return base + 2 * request.param

        @pytest.mark.parametrize("c", [1, 1, "1", 3.5, None, True, (1, 2), "\\u00e9"])
        def test_values(c, base):
            raise RuntimeError(repr((c, base)))

        def double(v):
            return 2 * v

        def square(v):
            return v * v

        OPS = {"d": double, "s": square}
        SHAPES = [(2, 3), pytest.param(4, 5, id="wide")]

        @pytest.mark.parametrize("rows, cols", SHAPES)  # pytest.param in a computed list
        def test_shapes(rows, cols):
            raise RuntimeError(rows * cols)

        @pytest.mark.parametrize("op", [OPS["d"], OPS["s"]])  # ids from the functions' names
        def test_ops(op):
            raise RuntimeError(op(3))

        @pytest.mark.parametrize("doubled", [3, 4], indirect=["doubled"])
        @pytest.mark.parametrize(["a", "b"], [(1, 2), pytest.param(3, 4, id="three")])
        def test_mixed(doubled, a, b):
            raise RuntimeError(repr((doubled, a, b)))
        """)
    ids = collected(path)
    expected = {"test_values[twenty-1_1]": "(1, 20)", "test_values[ten-1_2]": "('1', 10)",
                "test_values[ten-3.5]": "(3.5, 10)", "test_values[twenty-None]": "(None, 20)",
                "test_values[ten-True]": "(True, 10)", "test_values[ten-c6]": "((1, 2), 10)",
                "test_values[ten-\\xe9]": "('é', 10)", "test_mixed[twenty-three-4]": "(28, 3, 4)",
                "test_mixed[ten-1-2-3]": "(16, 1, 2)", "test_ops[square]": "9",
                "test_shapes[wide]": "20", "test_shapes[2-3]": "6"}
    assert set(expected) <= set(ids)
    for node, message in expected.items():
        done = run_script(source_of(f"{path}::{node}"), tmp_path)
        assert done.stderr.rstrip().endswith(f"RuntimeError: {message}"), (node, done.stderr)
    assert "    op = OPS['s']\n" in source_of(f"{path}::test_ops[square]")


def test_ids_with_slashes_and_spaces_give_a_script_with_a_safe_name(tmp_path):
    path = write_suite(tmp_path, """
        import pytest

        @pytest.mark.parametrize("where", ["a b/c", "d:e*f"])
        def test_it(where):
            raise RuntimeError(where)
        """)
    for case, name in {"a b/c": "test_it__test_it_a_b_c.py", "d:e*f": "test_it__test_it_d_e_f.py"}.items():
        node = f"{path}::test_it[{case}]"
        for given in (node, Path(node)):  # as typed, and as the CLI passes it
            script, source = read_input(given)
            assert script.parent == tmp_path and script.name == name, script
            done = run_script(source, tmp_path)
            assert done.stderr.rstrip().endswith(f"RuntimeError: {case}"), done.stderr
    with pytest.raises(ReducerError) as caught:
        read_input(f"{path}::test_it[no/such case]")
    assert caught.value.status == errors.NOT_FOUND and "\n" not in str(caught.value)
    assert "(it has [a b/c], [d:e*f])" in str(caught.value)


@pytest.mark.slow
def test_reduce_one_case_of_a_parametrized_test_end_to_end(tmp_path):
    out = tmp_path / "out"
    done = reducer_cli("reduce", f"{PYTEST_SUITE}::test_peak_is_positive[empty]", "--out", out,
                       "--max-time", "120", "--quiet", "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    repro = (out / "repro.py").read_text()
    assert not imported(repro) & {"pytest", "_pytest", "absl"} and "request" not in repro
    assert "verified" in (out / "reduce.log").read_text()
    ran = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, timeout=300,
                         cwd=out)
    assert ran.returncode == 1 and "zero-size array to reduction operation max" in ran.stderr
    code = [line for line in repro.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) <= 5 and "def " not in repro, repro  # the fixture, the ops and the other tests are gone


def test_absltest_cases_computed_from_module_values(tmp_path):
    path = tmp_path / "ops_test.py"
    path.write_text(textwrap.dedent("""
        from absl.testing import absltest, parameterized

        OPS = {"add": 1, "mul": 2}
        PAIRS = [("x", 1), ("y", 2)]

        class T(parameterized.TestCase):
            @parameterized.parameters(sorted(OPS))
            def test_single(self, name):
                raise RuntimeError(name)

            @parameterized.named_parameters(*PAIRS)
            def test_named(self, v):
                raise RuntimeError(v)

            @parameterized.product([dict(a=1, b=2), dict(a=3, b=4)], c=list(OPS))
            def test_grid(self, a, b, c):
                raise RuntimeError((a, b, c))
        """))
    expected = {"T::test_single1": ("name = sorted(OPS)[1]", "mul"), "T::test_named_y": ("v = list(PAIRS)[1][1]", "2"),
                "T::test_grid3": ("c = list(OPS)[1]", "(3, 4, 'mul')")}
    for node, (line, message) in expected.items():
        script = source_of(f"{path}::{node}")
        assert line in script.splitlines() and "absl" not in imported(script), script
        done = run_script(script, tmp_path)
        assert done.stderr.rstrip().endswith(f"RuntimeError: {message}"), (node, done.stderr)
