"""Capture through Flax (linen and NNX), Equinox and Optax: real library programs are captured at
their failing transformation, written back as scripts that import only jax (and enzyme_ad), and
those scripts fail the same way in a fresh interpreter; two are reduced end to end."""
import json
import subprocess
import sys

import pytest

import oracles
from conftest import HAS_ENZYME, PROGRAMS
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.as_script import emit
from reducer.levels.jaxpr.level import reduce_traced
from reducer.levels.jaxpr.model import Spec
from reducer.workers.sandbox import Limits, Sandbox

LIBRARY = PROGRAMS / "library"
pytest.importorskip("flax")
pytest.importorskip("equinox")
pytest.importorskip("optax")

WHILE = "Reverse-mode differentiation does not work for lax.while_loop"
ALLOWED = {"import jax", "import jax.numpy as jnp", "from jax import lax", "import numpy as np",
           "from enzyme_ad.jax import enzyme_jax_ir"}

CASES = {  # program: (its failing transformation, what the failure says)
    "linen_enzyme_topk": (["jit", "value_and_grad", "enzyme"], "could not compute the adjoint for this operation"),
    "nnx_while": (["jit", "grad"], WHILE),
    "equinox_while": (["jit", "value_and_grad"], WHILE),
    "pytrees_schur": (["jit", "grad"], "Differentiation rule for 'schur' not implemented"),
}


def capture(name: str, tmp_path) -> dict:
    out = tmp_path / "captured.json"
    subprocess.run([sys.executable, "-m", "reducer.levels.jaxpr.capture", str(LIBRARY / f"{name}.py"), str(out)],
                   cwd=tmp_path, capture_output=True, timeout=300)
    return json.loads(out.read_text())


def run_written_back(spec: dict, tmp_path, bind_all=False) -> tuple[str, subprocess.CompletedProcess]:
    import numpy as np

    text, arrays = emit(Spec.from_data(spec), bind_all=bind_all)
    (tmp_path / "repro.py").write_text(text)
    if arrays:
        np.savez(tmp_path / "inputs.npz", **arrays)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    return text, done


def imports(text: str) -> set:
    return {line for line in text.splitlines() if line.startswith(("import ", "from "))}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_library_program_is_captured_at_its_failing_transformation_and_written_back(name, tmp_path):
    chain, message = CASES[name]
    if "enzyme" in chain and not HAS_ENZYME:
        pytest.skip("enzyme-ad is not installed")
    found = capture(name, tmp_path)
    assert message in found["error"] or "Failed to parse pipeline" in found["error"], found
    specs = [jp.loads(s) for s in found["specs"]]
    spec = next(s for s in specs if [t["t"] for t in s["transforms"]] == chain)
    text, done = run_written_back(spec, tmp_path)
    assert message in done.stderr, done.stderr[-3000:]
    assert imports(text) <= ALLOWED, imports(text)
    if name == "linen_enzyme_topk":  # integer labels and a PRNG key are inputs; partial's keyword is closed over
        dtypes = {a["dtype"] for a in spec["args"]}
        assert {"int32", "uint32", "float32"} <= dtypes and "top_k" in json.dumps(spec["jaxpr"])
        assert "chlo.top_k" in done.stderr


def test_nnx_modules_are_split_into_arrays_for_the_capture(tmp_path):
    found = capture("nnx_while", tmp_path)
    spec = next(jp.loads(s) for s in found["specs"] if jp.loads(s)["transforms"][-1]["t"] == "grad")
    args = [(a["shape"], a["dtype"]) for a in spec["args"]]
    assert ([3], "float32") in args and ([3, 3], "float32") in args and ([2, 3], "float32") in args
    assert ([], "key<fry>") in args  # the module's PRNG stream: its key, an input like the others
    floats = [k for k, a in enumerate(args) if a[1] == "float32" and a[0] != [2, 3]]
    assert spec["transforms"][-1]["argnums"] == floats  # the Linear's bias and kernel: not the key or the input
    assert any(e["p"] == "while" for e in spec["jaxpr"]["eqns"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["linen_enzyme_topk", "nnx_while"])
def test_library_program_reduces_to_a_reproducing_script(name, tmp_path):
    chain, message = CASES[name]
    if "enzyme" in chain and not HAS_ENZYME:
        pytest.skip("enzyme-ad is not installed")
    source = (LIBRARY / f"{name}.py").read_text()
    sandbox = Sandbox(tmp_path / "runs", script_name="model.py")
    limits = Limits(timeout=120)
    log = []
    try:
        oracle, sig = oracles.detect(sandbox.run(source, limits, fresh=True))
        result = reduce_traced(source, sandbox, limits, oracle, sig, log.append, budget=150, jobs=1)
    finally:
        sandbox.close()
    assert result is not None and result.verified.startswith("yes"), "\n".join(log)
    assert result.equations_after <= 6 < result.equations_before
    assert imports(result.script) <= ALLOWED
    (tmp_path / "repro.py").write_text(result.script)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert message in done.stderr
