"""Notebooks: `reducer reduce/check NOTEBOOK.ipynb` runs the code cells in order, IPython's magics made plain."""
import ast
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import PROGRAMS, reducer_cli
from reducer import errors
from reducer.readers.inputs import read_input
from reducer.readers.notebook import cell_code, notebook_of, script_from_notebook

FORMS = PROGRAMS / "forms"


@pytest.mark.parametrize("cell, expected", [
    ("%matplotlib inline\nimport jax", "# %matplotlib inline\nimport jax"),
    ("%pip install jax optax\nx = 1", "# %pip install jax optax\nx = 1"),
    ("!ls -la\nx = 1", "# !ls -la\nx = 1"),
    ("files = !ls\nx = 1", "# files = !ls\nx = 1"),
    ("np.sum?\nx = 1", "# np.sum?\nx = 1"),
    ("??np.sum\nx = 1", "# ??np.sum\nx = 1"),
    ("%time y = f(x)", "y = f(x)"),
    ("%timeit -n 3 f(x)", "# %timeit -n 3 f(x)"),
    ("%timeit f(x)", "f(x)"),
    ("for i in range(2):\n    %time f(i)\n    !echo hi", "for i in range(2):\n    f(i)\n    pass  # !echo hi"),
    ("%%time\nx = 1\nx", "x = 1\nx"),
    ("%%capture out\n%matplotlib inline\nx = 1", "# %matplotlib inline\nx = 1"),
    ("%%bash\necho hi\nls", "# %%bash\n# echo hi\n# ls"),
    ("%%html\n<b>hi</b>", "# %%html\n# <b>hi</b>"),
    ("x = 5 % 3\ns = '''\n%not a magic\n'''", "x = 5 % 3\ns = '''\n%not a magic\n'''"),
    ("", ""),
])
def test_cell_magics(cell, expected):
    assert cell_code(cell) == expected


def test_writefile_becomes_a_python_write(tmp_path, monkeypatch):
    code = cell_code("%%writefile helper.py\ndef f(x):\n    return x + 1")
    ast.parse(code)
    appended = cell_code("%%writefile -a helper.py\ny = 2")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "cell", "exec"), {})
    exec(compile(appended, "cell", "exec"), {})
    assert (tmp_path / "helper.py").read_text() == "def f(x):\n    return x + 1\ny = 2\n"


def test_script_from_the_notebook_runs_its_code_cells_in_order():
    script = script_from_notebook(FORMS / "analysis.ipynb")
    ast.parse(script)
    assert "Analysis" not in script  # the markdown cell
    assert script.index("import jax") < script.index("def newton_sqrt") < script.index("jax.grad(newton_sqrt)")
    assert script.startswith("display = print\n")  # IPython's builtin, called and never imported
    assert "echo hello" not in script.replace("# echo hello", "")
    assert "with open('helper.py', 'w')" in script
    path, source = read_input(FORMS / "analysis.ipynb")
    assert path == FORMS / "analysis.py" and source == script and not path.exists()


def test_display_kept_when_the_notebook_imports_it(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from IPython.display import display\ndisplay(1)")]
    nbformat.write(nb, tmp_path / "a.ipynb")
    assert not script_from_notebook(tmp_path / "a.ipynb").startswith("display = print")


def test_bad_notebooks_are_one_line_errors(tmp_path):
    (tmp_path / "junk.ipynb").write_text("{not json")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("only words")]
    nbformat.write(nb, tmp_path / "words.ipynb")
    nb.cells = [nbformat.v4.new_code_cell("def f(:\n  pass")]
    nbformat.write(nb, tmp_path / "broken.ipynb")
    for name, status, words in (("junk.ipynb", errors.NOT_TEXT, "not a readable Jupyter notebook"),
                                ("words.ipynb", errors.NOT_TEXT, "no code to run"),
                                ("broken.ipynb", errors.SYNTAX, "code cell 1, line 1: syntax error"),
                                ("missing.ipynb", errors.NOT_FOUND, "no such file")):
        done = reducer_cli("check", tmp_path / name)
        assert done.returncode == 2, (name, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_notebook_of_is_one_code_cell():
    text = notebook_of("import jax\nprint(1)\n")
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    assert [c.cell_type for c in nb.cells] == ["code"] and nb.cells[0].source == "import jax\nprint(1)"


def test_check_a_notebook(tmp_path):
    shutil.copy(FORMS / "analysis.ipynb", tmp_path)
    done = reducer_cli("check", tmp_path / "analysis.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("adjoint-missing: source=jax op=while_loop rule=reverse")
    assert not (tmp_path / "helper.py").exists()  # %%writefile wrote into the run's own folder


@pytest.mark.slow
def test_reduce_a_notebook_with_magics(tmp_path):
    shutil.copy(FORMS / "analysis.ipynb", tmp_path)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")
    done = reducer_cli("reduce", "analysis.ipynb", "--max-time", "90", "--jobs", "2", "--runs", "1", "--json",
                       cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes")
    out = tmp_path / "reduced-analysis"
    repro = (out / "repro.py").read_text()
    assert "# Reduced by reducer from analysis.ipynb" in repro and "%" not in repro.split("tested).", 1)[1]
    assert "jax.grad" in repro and "while_loop" in repro
    nb = nbformat.read(out / "repro.ipynb", as_version=4)
    nbformat.validate(nb)
    assert len(nb.cells) == 1 and nb.cells[0].source == repro.rstrip("\n")
    assert not any(p.name.startswith(".repro") for p in out.iterdir())  # no temporary left by atomic writes
    # the environment variables that change JAX are kept for every run and recorded
    assert json.loads((out / "env.json").read_text())["environment_variables"]["XLA_FLAGS"] == \
        "--xla_force_host_platform_device_count=1"
    assert "XLA_FLAGS=--xla_force_host_platform_device_count=1" in (out / "report.md").read_text()
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "repro.py", alone)
    ran = subprocess.run([sys.executable, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=120)
    assert "Reverse-mode differentiation does not work for lax.while_loop" in ran.stderr
