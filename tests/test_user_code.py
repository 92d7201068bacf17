"""The user's own packages made part of the program (reducer.readers.user_code), and `-m MODULE`.

The editable install is simulated as pip writes it (a `*.dist-info` folder with `direct_url.json`
saying `"dir_info": {"editable": true}`, the project folder put on the path as pip's `.pth` file
puts it): a throwaway venv made with `--system-site-packages` would not see this project's `.venv`
(jax, reducer), and `pip install -e` would need the network for its build backend."""
import ast
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import PROGRAMS, reducer_cli
from reducer.readers import user_code
from reducer.errors import NOT_FOUND, ReducerError
from reducer.readers.inputs import read_input
from reducer.readers.user_modules import module_source

PROJECT = PROGRAMS / "project"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def inline(root: Path, script: str = "main.py", package=None) -> tuple[str, str]:
    """The program made standalone from `root` (its cwd too), and the note logged."""
    path = root / script
    text = user_code.standalone(path, path.read_text(), package=package, cwd=root)
    return text, " ".join(user_code.NOTES.pop(str(path), []))


def run(text: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "<inlined>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


def imports(text: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else node.module.split(".")[0])
    return found


def names(text: str) -> list[str]:
    return [s.name for s in ast.parse(text).body if isinstance(s, ast.FunctionDef | ast.ClassDef)]


# -- the inlining, on source text ----------------------------------------------------------------------
def test_the_local_package_becomes_part_of_the_script():
    text, note = inline(PROJECT, "train.py")
    assert imports(text) == {"argparse", "jax"}  # neither `spectra` nor a relative import is left
    # what train.py uses, and what that needs across the two modules (ops before the model that imports it)
    assert names(text) == ["normalise", "log_power", "SpectralModel", "main"]
    assert "unused_window" not in text and "__all__" not in text
    assert "EPS = 1e-12" in text and "return log_power(signal, self.floor)" not in text
    assert "power = log_power(signal, self.floor)" in text  # `ops.log_power` spelt as the inlined name
    assert "made part of it: spectra.ops, spectra.model, spectra" in note
    assert (PROJECT / "spectra" / "ops.py").read_text().startswith('"""Spectral operations."""')  # only read


def test_clashing_names_are_renamed_and_module_attributes_rewritten(tmp_path):
    write(tmp_path, {
        "geo/__init__.py": "",
        "geo/a.py": """
            SCALE = 2

            def f(x):
                return helper(x) * SCALE

            def helper(x):
                return x + 1
            """,
        "geo/b.py": """
            def helper(x):
                return x * 10

            def unused():
                return 0
            """,
        "main.py": """
            import geo.a
            import geo.b as gb

            def helper(x):
                return -x

            def scaled(SCALE):
                return geo.a.f(SCALE)

            print(geo.a.f(1), gb.helper(2), helper(3), scaled(0))
            """})
    text, note = inline(tmp_path)
    assert run(text) == "4 20 -3 2\n"
    assert imports(text) == set() and "geo" not in text
    assert names(text) == ["f", "helper_2", "helper_3", "helper", "scaled"]
    assert "unused" not in text and "made part of it" in note


def test_renaming_follows_scopes(tmp_path):
    write(tmp_path, {
        "m.py": """
            scale = 3

            def apply(x, scale=None):
                return x * (scale or 1)

            class Box:
                scale = 5

                def get(self):
                    return scale + len([scale for scale in range(2)])

            def bump():
                global scale
                scale += 1
            """,
        "main.py": """
            from m import apply, Box, bump
            scale = 100
            bump()
            print(apply(2), apply(2, 4), Box.scale, Box().get(), scale)
            """})
    text, _ = inline(tmp_path)
    assert run(text) == "2 8 5 6 100\n"
    assert "scale_2 = 3" in text and "global scale_2" in text


def test_effects_and_module_names_are_kept(tmp_path):
    write(tmp_path, {
        "ops.py": '''
            """Registers its operations on import."""
            import logging

            logger = logging.getLogger(__name__)
            REGISTRY = {}

            def register(f):
                REGISTRY[f.__name__] = f
                return f

            @register
            def double(x):
                return 2 * x

            for name in ("a", "b"):
                REGISTRY[name] = len

            print("loaded", __name__, logger.name)

            if __name__ == "__main__":
                print("never")
            ''',
        "main.py": """
            import ops
            print(sorted(ops.REGISTRY), ops.REGISTRY["double"](4))
            """})
    text, _ = inline(tmp_path)
    assert run(text) == "loaded ops ops\n['a', 'b', 'double'] 8\n"
    assert "never" not in text and "Registers" not in text


def test_library_imports_are_shared_or_renamed(tmp_path):
    write(tmp_path, {
        "mathy.py": """
            import json
            import math as np

            def root(x):
                return np.sqrt(x)

            def dump(x):
                return json.dumps(x)
            """,
        "main.py": """
            import json
            import numpy as np
            from mathy import root, dump as dumps

            def main():
                from mathy import root as r
                return r(9.0)

            print(root(4.0), np.zeros(1).shape, dumps([1]), main(), json.dumps(2))
            """})
    text, _ = inline(tmp_path)
    assert run(text) == "2.0 (1,) [1] 3.0 2\n"
    assert "import math as np_2" in text and "np_2.sqrt(x)" in text
    assert text.count("import json") == 1  # the script's own import serves the inlined code too


def test_future_annotations_stay_text(tmp_path):
    write(tmp_path, {
        "typed.py": """
            from __future__ import annotations
            from dataclasses import dataclass

            @dataclass
            class Config:
                rate: Undefined = 0.5

            def step(c: Config) -> NotDefinedEither:
                return c.rate * 2
            """,
        "main.py": """
            from typed import Config, step
            print(step(Config()))
            """})
    text, _ = inline(tmp_path)
    assert run(text) == "1.0\n" and "__future__" not in text


@pytest.mark.parametrize("files, reason", [
    ({"pkg/__init__.py": "from .core import *\n", "pkg/core.py": "X = 1\n", "main.py": "import pkg\nprint(pkg.X)\n"},
     "imports * from pkg.core"),
    ({"a.py": "import b\nA = 1\n", "b.py": "import a\nB = a.A\n", "main.py": "import a\nprint(a.A)\n"},
     "import cycle"),
    ({"paths.py": "import os\nHERE = os.path.dirname(__file__)\n", "main.py": "from paths import HERE\nprint(HERE)\n"},
     "reads its own __file__"),
    ({"pkg/__init__.py": "", "pkg/fast.py": "def f():\n    return 1\n",
      "pkg/api.py": "try:\n    from .fast import f\nexcept ImportError:\n    f = None\n",
      "main.py": "from pkg.api import f\nprint(f())\n"},
     "bound both by an import of the user's code and otherwise"),
    ({"util.py": "def f():\n    return 1\n", "main.py": "import util\nprint(util)\n"}, "uses the module util itself"),
])
def test_what_cannot_be_inlined_stays_a_package(tmp_path, files, reason):
    write(tmp_path, files)
    text, note = inline(tmp_path)
    assert text == (tmp_path / "main.py").read_text()  # today's behaviour: the package copied beside candidates
    assert "stays a package beside the program" in note and reason in note


def test_libraries_stay_libraries(tmp_path):
    write(tmp_path, {"main.py": "import json\nimport numpy as np\nimport jax.numpy as jnp\nfrom reducer import errors\n"
                                "print(np.zeros(1), json, jnp, errors)\n"})
    text, note = inline(tmp_path)
    assert text == (tmp_path / "main.py").read_text() and note == ""


def editable(tmp_path: Path, name: str = "wavelets", editable_flag: bool = True) -> tuple[Path, Path]:
    """A project installed in editable mode, as pip writes it: (the project folder, the site folder)."""
    project = write(tmp_path / "proj", {
        "pyproject.toml": f'[project]\nname = "{name}"\nversion = "0.1"\n',
        f"{name}/__init__.py": "from .transforms import haar, energy\n",
        f"{name}/transforms.py": """
            import jax.numpy as jnp

            def haar(x):
                return (x[::2] + x[1::2]) / jnp.sqrt(2.0)

            def energy(x, floor):
                return jnp.log(jnp.sum(x ** 2) + floor)
            """})
    info = tmp_path / "site" / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "direct_url.json").write_text(json.dumps(
        {"url": project.resolve().as_uri(), "dir_info": {"editable": True} if editable_flag else {}}))
    return project, tmp_path / "site"


@pytest.mark.parametrize("flag", [True, False])
def test_an_editable_install_is_the_users_code(tmp_path, monkeypatch, flag):
    project, site = editable(tmp_path, f"wavelets_{flag}".lower(), flag)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(project))  # what the editable install's .pth file does
    name = f"wavelets_{flag}".lower()
    work = write(tmp_path / "work", {"main.py": f"import {name}\nprint({name}.energy({name}.haar([1.0]), 0.0))\n"})
    text, note = inline(work)
    if flag:
        assert imports(text) == {"jax"} and names(text) == ["haar", "energy"] and "made part of it" in note
    else:  # installed, not editable: a library
        assert text == (work / "main.py").read_text() and note == ""


def test_a_tests_node_id_gets_the_projects_package(tmp_path, monkeypatch):
    write(tmp_path, {
        "mypkg/__init__.py": "",
        "mypkg/core.py": "def halve(x):\n    return x / 2\n",
        "tests/test_core.py": """
            from mypkg.core import halve

            def test_halve():
                assert halve(3) == 1
            """})
    monkeypatch.chdir(tmp_path)
    script, source = read_input(Path("tests/test_core.py::test_halve"))
    assert "mypkg" not in imports(source) and names(source)[0] == "halve"
    assert "made part of it: mypkg, mypkg.core" in " ".join(user_code.NOTES.pop(str(script)))


# -- -m MODULE ---------------------------------------------------------------------------------------------
def test_module_mode_finds_the_file_without_running_the_package(tmp_path):
    assert module_source("spectra.run", PROJECT) == (PROJECT / "spectra" / "run.py", "spectra")
    write(tmp_path, {"app/__init__.py": "raise SystemExit('the package ran')\n", "app/__main__.py": "print(1)\n"})
    assert module_source("app", tmp_path) == (tmp_path / "app" / "__main__.py", "app")
    for missing in ("no_such_module_here", "app.nothing", "spectra.run.deeper", "1bad"):
        with pytest.raises(ReducerError) as caught:
            module_source(missing, tmp_path)
        assert caught.value.status == NOT_FOUND and "\n" not in str(caught.value)


def test_module_mode_reads_the_module_as_a_script(monkeypatch):
    monkeypatch.chdir(PROJECT)
    script, source = read_input(Path(user_code.MODULE + "spectra.run"))
    assert script == PROJECT / "spectra.run.py" and not script.exists()  # a name where python -m runs, never written
    assert imports(source) == {"argparse", "jax"} and "class SpectralModel" in source
    user_code.NOTES.pop(str(script), None)


def test_module_mode_that_cannot_inline_imports_from_its_package(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/core.py": "X = 1\n", "app/star.py": "from .core import *\n",
                     "app/main.py": "from .star import X\nfrom . import core\nprint(X, core.X)\n"})
    text, note = inline(tmp_path, "app/main.py", package="app")
    assert "from app.star import X" in text and "from app import core" in text and "imports *" in note


def test_cli_takes_a_script_or_a_module(monkeypatch):
    from reducer import cli, entry

    seen = {}

    def fake(path, out, options, *a, **kw):
        seen.update(path=path, args=kw.get("args"), module=kw.get("module"))
        raise ReducerError("stop here", 2)

    monkeypatch.setattr(entry, "job_for", fake)
    runner = CliRunner()
    for command in ("check", "reduce"):
        done = runner.invoke(cli.app, [command, "-m", "spectra.run", "--", "--floor", "./0.0"])
        assert seen == {"path": None, "args": ("--floor", "./0.0"), "module": "spectra.run"}, done.output
        runner.invoke(cli.app, [command, "train.py", "--", "--floor", "1"])
        assert seen == {"path": Path("train.py"), "args": ("--floor", "1"), "module": None}
        both = runner.invoke(cli.app, [command, "train.py", "-m", "spectra.run"])
        neither = runner.invoke(cli.app, [command])
        assert both.exit_code == neither.exit_code == 2
        assert "not both" in both.output and "or -m MODULE" in neither.output
        assert len(both.output.strip().splitlines()) == 1


# -- end to end ----------------------------------------------------------------------------------------------
def standalone_fails_the_same(out: Path, tmp_path: Path) -> str:
    """repro.py alone in an empty folder fails with the signature the reduction kept; its text."""
    repro = (out / "repro.py").read_text()
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "repro.py", alone / "repro.py")
    check = reducer_cli("check", "repro.py", "--json", cwd=alone, timeout=300)
    assert check.returncode == 0, check.stderr
    wanted = json.loads((out / "signature.json").read_text())
    assert json.loads(check.stdout)["family"] == wanted["family"]
    return repro


@pytest.mark.slow
def test_reduce_a_script_with_a_local_package(tmp_path):
    done = reducer_cli("reduce", PROJECT / "train.py", "--max-time", "40", "--out", tmp_path / "out", "--json",
                       "--jobs", "2", timeout=900)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"]
    assert "made part of it: spectra.ops, spectra.model, spectra" in (tmp_path / "out" / "reduce.log").read_text()
    repro = standalone_fails_the_same(tmp_path / "out", tmp_path)
    assert "spectra" not in imports(repro) and "." not in imports(repro)


@pytest.mark.slow
def test_reduce_a_module_that_uses_an_editable_package(tmp_path):
    project, site = editable(tmp_path)
    work = write(tmp_path / "work", {
        "app/__init__.py": "",
        "app/settings.py": "FLOOR = 0.0\n",
        "app/main.py": """
            import argparse

            import jax
            import jax.numpy as jnp
            from wavelets import energy, haar

            from .settings import FLOOR

            parser = argparse.ArgumentParser()
            parser.add_argument("--floor", type=float, default=FLOOR)
            parser.add_argument("--n", type=int, default=4)
            args = parser.parse_args()
            g = jax.grad(lambda x: energy(haar(x), args.floor))(jnp.zeros(args.n))
            assert not jnp.isnan(g).any(), "NaN gradient"
            """})
    env = {**os.environ, "PYTHONPATH": f"{site}:{project}"}
    done = reducer_cli("reduce", "-m", "app.main", "--max-time", "40", "--out", tmp_path / "out", "--json",
                       "--jobs", "2", "--", "--n", "4", cwd=work, env=env, timeout=900)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"]
    log = (tmp_path / "out" / "reduce.log").read_text()
    line = next(ln for ln in log.splitlines() if "made part of it" in ln)
    assert all(m in line for m in ("app", "app.settings", "wavelets", "wavelets.transforms")), line
    repro = standalone_fails_the_same(tmp_path / "out", tmp_path)
    assert not {"wavelets", "app", "."} & imports(repro)
    # without the editable install on the path, the package cannot be imported: repro.py does without it
    assert subprocess.run([sys.executable, "-c", "import wavelets"], cwd=tmp_path, capture_output=True).returncode
