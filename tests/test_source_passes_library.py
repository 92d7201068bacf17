"""The source passes that remove library layers: cutting what never ran after the failure (read from
a real traceback), training loops to their first iteration, and module calls inlined (real Flax
linen, Equinox and Optax code, each candidate run in-process)."""
import ast
import runpy
import traceback

import numpy as np
import pytest

from reducer.levels.source.passes import SOURCE_PASSES
from reducer.levels.source.passes._failure_site import frames, relocate, running
from reducer.levels.source.passes.cut_after_failure import CutAfterFailure, _first
from reducer.levels.source.passes.inline_methods import InlineMethods
from reducer.levels.source.representation import PythonSource, Script

optax = pytest.importorskip("optax")

TRAINING = '''
import jax
import jax.numpy as jnp
import optax


def loss_fn(params, x):
    # an orthogonal map from Householder reflections: JAX has no JVP rule for it
    q = jax.lax.linalg.householder_product(params["v"], params["tau"])
    return jnp.sum((q @ x) ** 2)


optimizer = optax.sgd(0.1)


def train(params, data):
    opt_state = optimizer.init(params)
    for step in range(3):
        loss, grads = jax.value_and_grad(loss_fn)(params, data[step])
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        print(step, loss)
    return params


final = train({"v": jnp.eye(3), "tau": jnp.ones(3)}, jnp.ones((3, 3, 2)))
print(final)
'''


def failure_of(text: str, tmp_path, name: str = "train.py") -> str:
    """The traceback a run of `text` as the script `name` ends with (the program is run in-process)."""
    path = tmp_path / name
    path.write_text(text)
    try:
        runpy.run_path(str(path), run_name="__main__")
    except Exception:
        return traceback.format_exc()
    raise AssertionError("the program did not fail")


def fails_the_same(text: str, tmp_path) -> bool:
    out = failure_of(text, tmp_path, "candidate.py")
    return "Differentiation rule for 'householder_product' not implemented" in out


@pytest.fixture(scope="module")
def training_failure(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("train")
    return failure_of(TRAINING, tmp), tmp


def test_the_frames_of_the_script_are_read_from_its_traceback_and_carried_to_its_normalized_print(training_failure):
    output, _ = training_failure
    found = frames(output, "train.py")
    assert [name for _, name in found] == ["<module>", "train", "loss_fn"]  # not jax's frames
    lines = TRAINING.splitlines()
    assert "final = train(" in lines[found[0][0] - 1] and "value_and_grad" in lines[found[1][0] - 1]
    normalized = PythonSource().normalize(TRAINING)
    moved = relocate(found, TRAINING, normalized)
    assert "householder_product" in normalized.splitlines()[moved[2][0] - 1]  # the comment line is gone
    rep = PythonSource()
    rep.note_failure(normalized, output, "train.py", ran=TRAINING)
    assert rep.parse(normalized).failure == moved and rep.parse(TRAINING).failure == ()


def test_frames_of_a_crash_dump_and_only_of_the_last_traceback():
    dump = ('Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call first):\n'
            '  File "/x/site-packages/jax/_src/api.py", line 9 in cache_miss\n'
            '  File "/tmp/run/train.py", line 12 in step\n  File "/tmp/run/train.py", line 30 in <module>\n')
    assert frames(dump, "train.py") == ((12, "step"), (30, "<module>"))
    chained = ('Traceback (most recent call last):\n  File "/a/train.py", line 3, in f\nKeyError: 1\n\n'
               'During handling of the above exception, another exception occurred:\n\n'
               'Traceback (most recent call last):\n  File "/a/train.py", line 7, in <module>\nValueError: 2\n')
    assert frames(chained, "train.py") == ((7, "<module>"),)
    assert frames("no traceback here", "train.py") == ()


def test_dead_code_after_the_failure_goes_and_the_training_loop_runs_once(training_failure):
    output, tmp = training_failure
    rep = PythonSource()
    program = rep.normalize(TRAINING)
    rep.note_failure(program, output, "train.py", ran=TRAINING)
    script = rep.parse(program)
    candidates = [CutAfterFailure().apply(script, p) for p in CutAfterFailure().points(script)]
    first = candidates[0]
    assert "step = 0" in first and "for step" not in first  # the loop is its first iteration
    for dead in ("optimizer.update", "apply_updates", "print(", "return params"):
        assert dead not in first, dead
    assert "optimizer.init" in first and rep.size(first) < rep.size(program) - 40
    assert fails_the_same(first, tmp)
    assert len(set(candidates)) == len(candidates) and all(rep.size(c) < rep.size(program) for c in candidates)


def test_without_a_known_failure_the_pass_proposes_nothing():
    assert CutAfterFailure().points(Script(PythonSource().normalize(TRAINING))) == []


def test_a_closure_on_the_path_keeps_what_made_it_and_lambda_frames_cut_nothing():
    text = PythonSource().normalize('''
def make_step(optimizer):
    def step(params):
        grads = g(params)
        return optimizer.update(grads)
    return step
loss = lambda p: p
s = make_step(1)
s(2)
print("after")
''')
    tree = ast.parse(text)
    step_line = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.targets[0].id == "grads")
    assert running(tree, 7, "<lambda>") == []  # the lambda's line is not where anything ran
    failure = ((step_line, "step"), (9, "<module>"))
    made = [CutAfterFailure().apply(Script(text, failure), p) for p in CutAfterFailure().points(Script(text, failure))]
    assert "return step" in made[0] and "optimizer.update" not in made[0] and "after" not in made[0]


@pytest.mark.parametrize("items, first", [
    ("range(10)", "0"), ("range(2, 10)", "2"), ("data", "data[0]"), ("[a, b]", "a"),
    ("enumerate(data)", "(0, data[0])"), ("enumerate(data, 1)", "(1, data[0])"),
    ("zip(xs, range(3))", "(xs[0], 0)"), ("enumerate(data, start=1)", "next(iter(enumerate(data, start=1)))"),
])
def test_the_first_value_a_loop_binds(items, first):
    assert ast.unparse(_first(ast.parse(items, mode="eval").body, by_index=True)) == first
    if items == "data":
        assert ast.unparse(_first(ast.parse(items, mode="eval").body, by_index=False)) == "next(iter(data))"


def run_namespace(text: str) -> dict:
    namespace: dict = {"__name__": "__main__"}
    exec(compile(text, "<candidate>", "exec"), namespace)
    return namespace


def test_an_equinox_module_call_becomes_its_computation():
    pytest.importorskip("equinox")
    program = PythonSource().normalize('''
import equinox as eqx
import jax
import jax.numpy as jnp

class Scale(eqx.Module):
    weight: jax.Array

    def __init__(self, n):
        self.weight = jnp.arange(n) * 1.0

    def __call__(self, x):
        return jnp.sin(self.weight * x)

model = Scale(3)
y = model(jnp.ones(3))
''')
    made = list(InlineMethods().candidates(program))
    assert len(made) == 1 and "y = jnp.sin(model.weight * jnp.ones(3))" in made[0]
    np.testing.assert_allclose(run_namespace(made[0])["y"], run_namespace(program)["y"])


LINEN = '''
import flax.linen as nn
import jax
import jax.numpy as jnp

class Head(nn.Module):
    def setup(self):
        self.scale = self.param('scale', nn.initializers.normal(), (3,))
        self.dense = nn.Dense(2)

    def squash(self, x):
        h = jnp.tanh(x * self.scale)
        return h

    def __call__(self, x):
        h = self.squash(x)
        return self.dense(h)

class Bias(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x + self.param('b', nn.initializers.normal(), x.shape[-1:])

def loss(model, params, x):
    return jnp.sum(model.apply({'params': params}, x))

x = jnp.ones((4, 3))
model = Head()
params = model.init(jax.random.key(0), x)['params']
out = model.apply({'params': params}, x)
bias = Bias()
total = loss(bias, bias.init(jax.random.key(1), x)['params'], x)
'''


def test_a_linen_apply_becomes_its_computation_on_the_parameters():
    pytest.importorskip("flax")
    program = PythonSource().normalize(LINEN)
    before = run_namespace(program)
    made = {c for c in InlineMethods().candidates(program)}
    applied = next(c for c in made if "out = nn.Dense(2).apply({'params': params['dense']}, h)" in c)
    assert "h = model.apply({'params': params}, x, method='squash')" in applied
    np.testing.assert_allclose(run_namespace(applied)["out"], before["out"], rtol=1e-6)
    inner = next(c for c in made if "h = jnp.tanh(x * self.scale)\n        return self.dense(h)" in c)
    assert "def squash" not in inner  # the method went with its last use
    np.testing.assert_allclose(run_namespace(inner)["out"], before["out"], rtol=1e-6)
    compact = next(c for c in made if "jnp.sum(x + params['b'])" in c)  # the module passed as an argument
    np.testing.assert_allclose(run_namespace(compact)["total"], before["total"], rtol=1e-6)


COMPACT = '''
import flax.linen as nn
import jax
import jax.numpy as jnp

class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.tanh(nn.Dense(3)(x))

class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = Block()(nn.Dense(3)(x))
        h = nn.Dense(3)(h) + Block()(h)
        return nn.Dense(2, name='head')(h)

x = jnp.ones((4, 3))
model = Net()
params = model.init(jax.random.key(0), x)['params']
out = model.apply({'params': params}, x)
'''


def test_a_compact_linen_apply_applies_each_inline_submodule_to_its_own_parameters():
    pytest.importorskip("flax")
    program = PythonSource().normalize(COMPACT)
    before = run_namespace(program)
    made = list(InlineMethods().candidates(program))
    inlined = next(c for c in made if "nn.Dense(2, name='head').apply({'params': params['head']}" in c)
    for used in ("nn.Dense(3).apply({'params': params['Dense_0']}, x)", "params['Dense_1']",
                 "Block().apply({'params': params['Block_0']}", "params['Block_1']"):
        assert used in inlined, inlined
    np.testing.assert_allclose(run_namespace(inlined)["out"], before["out"], rtol=1e-6)


def test_both_passes_are_registered_with_the_failure_cut_first():
    names = [p.name for p in SOURCE_PASSES]
    # the two passes that read the failure's traceback come first: the largest cuts
    assert names[:2] == ["call-failing-function", "cut-after-failure"] and "inline-methods" in names
    assert names.index("inline-methods") == names.index("inline-calls") + 1


@pytest.mark.slow
def test_a_source_level_reduction_cuts_what_never_ran_from_the_traceback_of_its_runs(tmp_path):
    """End to end: the reduction records where each accepted program failed, and the cut is taken."""
    from conftest import reducer_cli

    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    done = reducer_cli("reduce", script, "--levels", "source", "--max-time", "150", "--stall", "60",
                       "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "reduced-train" / "reduce.log").read_text()
    cut = next(line for line in log.splitlines() if "pass cut-after-failure:" in line)
    assert not cut.endswith(" 0 accepted"), cut
    repro = (tmp_path / "reduced-train" / "repro.py").read_text()
    code = "\n".join(line for line in repro.splitlines() if not line.lstrip().startswith("#"))
    assert "householder_product" in code and "optimizer.update" not in code and "apply_updates" not in code
