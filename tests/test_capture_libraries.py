"""The capture on real Equinox / Flax NNX / Optax programs whose failure lies in the script's own
custom differentiation rules: the rules are kept in the captured program and written back as
`jax.custom_vjp` / `jax.custom_jvp` definitions that fail the same way, importing only jax."""
import json
import os
import subprocess
import sys

import pytest

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.as_script import emit
from reducer.levels.jaxpr.model import Spec

pytest.importorskip("equinox")
pytest.importorskip("flax")
pytest.importorskip("optax")

EQUINOX = '''
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


@jax.custom_vjp
def quantize(w, scale):
    return jnp.round(w / scale * 7) * scale / 7


def quantize_fwd(w, scale):
    return quantize(w, scale), (w, scale)


def quantize_bwd(res, g):
    w, scale = res
    return (jnp.where(jnp.abs(w) <= scale, g, 0.0),)  # no cotangent for `scale`


quantize.defvjp(quantize_fwd, quantize_bwd)


class Linear(eqx.Module):
    weight: jax.Array
    scale: jax.Array

    def __call__(self, x):
        return quantize(self.weight, self.scale) @ x


@eqx.filter_value_and_grad
def loss(model, x):
    return optax.l2_loss(jax.vmap(model)(x)).mean()


model = Linear(jnp.ones((2, 3)), jnp.ones(()))
print(eqx.filter_jit(loss)(model, jnp.ones((4, 3))))
'''

NNX = '''
import jax
import jax.numpy as jnp
from flax import nnx


@jax.custom_jvp
def softclip(x):
    return jnp.tanh(x) * 3.0


@softclip.defjvp
def softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softclip(x), 3.0 * (1.0 - jnp.tanh(x) ** 2) * t * t  # not linear in t


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x):
        return softclip(self.linear(x)).sum()


model = Model(nnx.Rngs(0))
print(nnx.jit(nnx.grad(lambda m, x: m(x)))(model, jnp.ones((4, 3))))
'''

CASES = {"equinox_custom_vjp": (EQUINOX, "custom_vjp", "Custom VJP bwd rule must produce an output with the same container"),
         "nnx_custom_jvp": (NNX, "custom_jvp", "AssertionError")}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_own_rules_are_captured_through_the_library_and_written_back(name, tmp_path):
    source, kind, failure = CASES[name]
    (tmp_path / "model.py").write_text(source)
    out = tmp_path / "captured.json"
    subprocess.run([sys.executable, "-m", "reducer.levels.jaxpr.capture", "model.py", str(out)], cwd=tmp_path,
                   capture_output=True, timeout=300)
    specs = [jp.loads(s) for s in json.loads(out.read_text())["specs"]]
    kept = [s for s in specs if any(e["p"] == kind for _, j in jp.jaxprs(s["jaxpr"]) for e in j["eqns"])
            and any(t["t"] in ("grad", "value_and_grad") for t in s["transforms"])]
    assert kept, [s["transforms"] for s in specs]
    text, arrays = emit(Spec.from_data(kept[0]))
    imports = {line for line in text.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"import jax", "import jax.numpy as jnp", "from jax import lax", "import numpy as np"}
    assert f"jax.{kind}(" in text
    if arrays:
        import numpy as np

        np.savez(tmp_path / "inputs.npz", **arrays)
    (tmp_path / "repro.py").write_text(text)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and failure in done.stderr, done.stderr[-800:]


NNX_STEP = '''
import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.dense = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x):
        return self.dense(x)


@nnx.jit
def grads(model, x):
    return nnx.grad(lambda m: jnp.sum(jnp.tanh(m(x))))(model)


g = grads(Model(nnx.Rngs(0)), jnp.ones((4, 3)))
print("ran through", jax.tree_util.tree_leaves(g)[0].shape)
'''


def test_recording_ahead_leaves_nnx_grad_inside_nnx_jit_running_as_it_does(tmp_path):
    """Recording a call ahead traces it once more; NNX's own function under `jax.grad` must not be
    traced again (it pops a queue NNX fills for the real call), or the program dies in NNX."""
    from reducer.levels.jaxpr.calls_recorded_ahead import library_internal

    (tmp_path / "model.py").write_text(NNX_STEP)
    out = tmp_path / "captured.json"
    done = subprocess.run([sys.executable, "-m", "reducer.levels.jaxpr.capture", "model.py", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "REDUCER_CAPTURE_AHEAD": "1"})
    assert done.returncode == 0 and "ran through" in done.stdout, done.stderr[-800:]
    recorded = [[t["t"] for t in jp.loads(s)["transforms"]] for s in json.loads(out.read_text())["ahead"]]
    assert ["jit"] in recorded and ["jit", "grad"] in recorded, recorded  # the user's calls, at NNX's level
    from flax.nnx.transforms.autodiff import GradFn

    assert library_internal(GradFn.__call__) and not library_internal(NNX_STEP.count)
