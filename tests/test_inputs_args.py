"""Arguments after `--`, the environment that changes JAX, and data files written into a standalone reproducer."""
import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import PROGRAMS, reducer_cli
from oracles.outcome import RunResult
from reducer import env as envmod
from reducer import errors
from reducer.data_literals import DATA_NPZ, LITERAL_ELEMENTS
from reducer.data_literals.writeback import rewrite
from reducer.readers.inputs import argument_files, data_files, needs_input, with_arguments

FORMS = PROGRAMS / "forms"
REPO = Path(__file__).resolve().parent.parent


# -- arguments ----------------------------------------------------------------------------------------
def test_arguments_are_baked_in_before_the_program():
    source = '"""Doc."""\nfrom __future__ import annotations\nimport argparse\nprint(1)\n'
    baked = with_arguments(source, "train.py", ["--lr", "0.1", "--config", "cfg.yaml"])
    tree = ast.parse(baked)
    assert ast.unparse(tree.body[2]) == "import sys"
    assert ast.unparse(tree.body[3]) == "sys.argv = ['train.py', '--lr', '0.1', '--config', 'cfg.yaml']"
    assert ast.unparse(tree.body[4]) == "import argparse"
    assert with_arguments(source, "train.py", []) == source
    assert with_arguments("x = 1", "t.py", ["a"]).endswith("sys.argv = ['t.py', 'a']\nx = 1")


def test_files_named_in_arguments_go_beside_candidates(tmp_path):
    (tmp_path / "cfg.yaml").write_text("lr: 0.1\n")
    (tmp_path / "data" / "train").mkdir(parents=True)
    (tmp_path / "data" / "train" / "x.npz").write_bytes(b"1234")
    (tmp_path / "data" / "other.npz").write_bytes(b"not named")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "y.npz").write_bytes(b"1" * 2000)
    stage = tmp_path / "stage"
    args, files = argument_files(["--lr", "0.1", "--config", "cfg.yaml", "--data=data/train/x.npz", "big/y.npz",
                                  "../outside", "missing.txt", "-v"], cwd=tmp_path, stage=stage, limit_bytes=1000)
    assert files == (tmp_path / "cfg.yaml", stage / "data")
    # a file inside folders is staged at its relative path, alone: that folder goes next to candidates
    assert sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file()) == ["data/train/x.npz"]
    # what fits keeps its relative path; what does not becomes an absolute path
    assert args[:5] == ["--lr", "0.1", "--config", "cfg.yaml", "--data=data/train/x.npz"]
    assert args[5] == str((tmp_path / "big" / "y.npz").resolve())
    assert args[6:] == ["../outside", "missing.txt", "-v"]


def test_files_beside_the_script_go_with_it_where_it_names_them_not_where_their_name_is_in_its_text(tmp_path):
    """A folder `p` next to the script (where a reduction's output folder was: copying it beside the
    reproducer copied the output into itself) is not the program's because `p` is a letter of its text."""
    for name in ("p", "train.csv", "weights.npz", "helpers.py", "data", "unused.txt"):
        (tmp_path / name).mkdir() if "." not in name else (tmp_path / name).write_text("1")
    (tmp_path / "data" / "x.npy").write_text("1")
    source = ('import numpy as np\nimport helpers\np = np.loadtxt("train.csv")\nw = np.load("weights" + ".npz")\n'
              'x = np.load(f"{ROOT}/data/x.npy")  # unused.txt is only in a comment\n')
    script = tmp_path / "train.py"
    script.write_text(source)
    assert [p.name for p in data_files(script, source)] == ["data", "helpers.py", "train.csv", "weights.npz"]


def test_a_data_folder_that_holds_the_output_folder_is_copied_without_it(tmp_path):
    from reducer.data_literals.standalone import Standalone

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.npy").write_text("1")
    out = tmp_path / "data" / "reduced-train"
    assert Standalone("x = 1\n", beside=(tmp_path / "data",)).write(out) == ["data"]
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["data", "data/x.npy"]


def test_needs_input_hints_at_arguments_after_the_double_dash():
    usage = "usage: train.py [-h] --data DATA\ntrain.py: error: the following arguments are required: --data\n"
    reason = needs_input(RunResult(returncode=2, stdout="", stderr=usage, seconds=0.1))
    assert "give them after `--`" in reason
    wrong = "usage: train.py [-h]\ntrain.py: error: unrecognized arguments: --lrr 0.1\n"
    assert "rejects its command-line arguments" in needs_input(RunResult(returncode=2, stdout="", stderr=wrong,
                                                                         seconds=0.1))


def test_a_script_without_its_arguments_is_a_one_line_error(tmp_path):
    shutil.copy(FORMS / "train.py", tmp_path)
    done = reducer_cli("reduce", tmp_path / "train.py", "--runs", "1", "--out", tmp_path / "o", cwd=tmp_path)
    assert done.returncode == errors.NEEDS_INPUT and "give them after `--`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_jax_variables_are_recorded():
    found = envmod.jax_variables({"XLA_FLAGS": "--x", "JAX_ENABLE_X64": "1", "TF_CPP_MIN_LOG_LEVEL": "0",
                                  "CUDA_VISIBLE_DEVICES": "0", "HOME": "/root", "MY_JAX": "no"})
    assert found == {"CUDA_VISIBLE_DEVICES": "0", "JAX_ENABLE_X64": "1", "TF_CPP_MIN_LOG_LEVEL": "0",
                     "XLA_FLAGS": "--x"}
    assert "environment: XLA_FLAGS=--x" in envmod.render({"environment_variables": {"XLA_FLAGS": "--x"}})


# -- data written into the reproducer ----------------------------------------------------------------
def record_and_rewrite(folder: Path, program: str):
    """Run `program` (saved as prog.py in `folder`) under the recorder, and rewrite it."""
    (folder / "prog.py").write_text(program)
    rec = folder / "rec"
    rec.mkdir()
    subprocess.run([sys.executable, "-m", "reducer.data_literals", "prog.py", str(rec)], cwd=folder,
                   capture_output=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return rewrite(program, json.loads((rec / "records.json").read_text()), rec)


def run_alone(folder: Path, program: str, arrays: dict | None = None) -> subprocess.CompletedProcess:
    alone = folder / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text(program)
    if arrays:
        np.savez(alone / DATA_NPZ, **arrays)
    return subprocess.run([sys.executable, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=120)


def test_small_and_large_arrays(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.arange(6, dtype=np.float32).reshape(2, 3) / 3, k=np.array([1, 2]))
    np.save(tmp_path / "big.npy", np.linspace(0, 1, LITERAL_ELEMENTS + 1))
    program = ("import numpy as np\nd = np.load('d.npz')\nbig = np.load('big.npy')\n"
               "print(float(d['x'].sum() + d['k'].sum() + big.sum()))\n")
    done = record_and_rewrite(tmp_path, program)
    assert "np.load('d.npz')" not in done.program and "np.load('big.npy')" not in done.program
    assert "np.array([[0.0, 0.33333334, 0.6666667], [1.0, 1.3333334, 1.6666666]], dtype=np.float32)" in done.program
    assert "_repro_data = np.load('repro_data.npz')" in done.program and "big = _repro_data['a0']" in done.program
    assert list(done.arrays) == ["a0"] and done.arrays["a0"].shape == (LITERAL_ELEMENTS + 1,)
    assert done.kept == set() and {Path(p).name for p in done.rewritten} == {"d.npz", "big.npy"}
    want = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert run_alone(tmp_path, done.program, done.arrays).stdout == want


def test_json_csv_open_and_with_blocks(tmp_path):
    (tmp_path / "cfg.json").write_text(json.dumps({"lr": 0.5, "layers": [1, 2], "name": "m"}))
    np.savetxt(tmp_path / "t.csv", np.array([[1.5, 2.0], [3.0, 4.25]]), delimiter=",")
    (tmp_path / "notes.txt").write_text("hello\n")
    np.savez(tmp_path / "w.npz", w=np.array([1.0, -2.0], dtype=np.float64))
    program = ("import json\nimport numpy\nwith open('cfg.json') as f:\n    cfg = json.load(f)\n"
               "t = numpy.loadtxt('t.csv', delimiter=',')\nwith numpy.load('w.npz') as z:\n    w = z['w']\n"
               "note = open('notes.txt').read()\nprint(cfg['lr'] * t.sum() + w.sum(), cfg['layers'], note)\n")
    done = record_and_rewrite(tmp_path, program)
    assert "open(" not in done.program and "load" not in done.program, done.program
    assert "cfg = {'lr': 0.5, 'layers': [1, 2], 'name': 'm'}" in done.program
    assert "io.StringIO('hello\\n')" in done.program
    want = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert run_alone(tmp_path, done.program).stdout == want


def test_what_cannot_be_written_back_is_kept(tmp_path):
    (tmp_path / "obj.pkl").write_bytes(b"")
    subprocess.run([sys.executable, "-c", "import pickle, fractions; pickle.dump(fractions.Fraction(1, 3), "
                    "open('obj.pkl', 'wb'))"], cwd=tmp_path, check=True)
    for i in range(2):
        np.save(tmp_path / f"p{i}.npy", np.full(2, float(i)))
    program = ("import pickle\nimport numpy as np\nwith open('obj.pkl', 'rb') as f:\n    obj = pickle.load(f)\n"
               "s = sum(np.load(f'p{i}.npy').sum() for i in range(2))\nprint(obj, s)\n")
    done = record_and_rewrite(tmp_path, program)
    # a Fraction is no literal; one call reading two different files stays a call
    assert "pickle.load(f)" in done.program and "np.load(f'p{i}.npy')" in done.program
    assert {Path(p).name for p in done.kept} == {"obj.pkl", "p0.npy", "p1.npy"}


def test_a_check_reading_written_back_data_keeps_its_line(tmp_path):
    np.savez(tmp_path / "inputs.npz", x=np.arange(3, dtype=np.float32))
    done = record_and_rewrite(tmp_path, "import numpy\nassert numpy.load('inputs.npz')['x'].sum() < 0, 'neg'\n")
    assert done.program.splitlines()[1:] == ["data = numpy.array([0.0, 1.0, 2.0], dtype=numpy.float32)",
                                             "assert data.sum() < 0, 'neg'"]


# -- end to end ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_reduce_with_arguments_after_double_dash(tmp_path):
    for name in ("train.py", "train_data.npz"):
        shutil.copy(FORMS / name, tmp_path)
    done = reducer_cli("reduce", "train.py", "--max-time", "90", "--jobs", "2", "--runs", "1", "--json", "--",
                       "--data", "train_data.npz", "--dtype", "float16", "--lr", "0.1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"].startswith("yes")
    out = tmp_path / "reduced-train"
    repro = (out / "repro.py").read_text()
    code = "\n".join(line for line in repro.splitlines() if not line.startswith("#"))
    assert "sys.argv = [" in code and "'float16'" in code  # the failure needs --dtype float16
    assert "train_data.npz')" not in code.replace("'--data', 'train_data.npz'", "")  # the data is written in
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "repro.py", alone)
    ran = subprocess.run([sys.executable, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "Unsupported dtype float16" in ran.stderr, ran.stderr


@pytest.mark.slow
def test_reduce_a_script_reading_an_npz_to_a_standalone_reproducer(tmp_path):
    for name in ("reads_npz.py", "inputs.npz"):
        shutil.copy(FORMS / name, tmp_path)
    done = reducer_cli("reduce", "reads_npz.py", "--max-time", "90", "--jobs", "2", "--runs", "1", "--json",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes")
    out = tmp_path / "reduced-reads_npz"
    repro = (out / "repro.py").read_text()
    assert "inputs.npz" not in repro and "numpy.array(" in repro
    assert "written into the reproducer" in (out / "report.md").read_text()
    assert not (out / "inputs.npz").exists()
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "repro.py", alone)
    check = reducer_cli("check", alone / "repro.py", "--json", cwd=alone)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["family"] == result["signature"]["family"] == "own-check"
    assert json.loads(check.stdout)["fields"] == result["signature"]["fields"]


def test_the_environment_that_changes_jax_is_kept_for_every_run(tmp_path):
    (tmp_path / "x64.py").write_text("import jax.numpy as jnp\nassert jnp.zeros(1).dtype == jnp.float32, 'x64 is on'\n")
    off = reducer_cli("check", tmp_path / "x64.py", cwd=tmp_path)
    assert off.returncode == 1 and "nothing to reduce" in off.stderr
    on = reducer_cli("check", tmp_path / "x64.py", cwd=tmp_path, env=dict(os.environ, JAX_ENABLE_X64="1"))
    assert on.returncode == 0 and on.stdout.startswith("own-check:"), on.stderr
