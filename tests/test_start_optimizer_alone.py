"""The optimizer-alone start (`reducer.levels.source.starts.optimizer_alone`): a training loop whose
loss does not fall, proposed as the program's own optimizer on a toy problem under the program's own
check. The proposals are read from program texts in the styles users write (Equinox, Flax linen's
`TrainState`, Flax NNX's `nnx.Optimizer`, plain JAX); the values no statement gives come from a real
run, and one proposal is judged by the real oracle and the source level's guard."""
import ast
import json
from pathlib import Path

import pytest

from conftest import PROGRAMS, reducer_cli, run_text
from oracles.outcome import RunResult, Signature
from oracles.own_check import OwnCheck
from reducer import counterfactual
from reducer.levels.source.check_values import guard_for
from reducer.levels.source.representation import tokens
from reducer.levels.source.starts import STARTS
from reducer.levels.source.starts.optimizer_alone import OptimizerAlone
from reducer.levels.source.starts.program_slice import Scope, changed_elsewhere, scope_of, slice_for

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks" / "cases"
ASCENT = PROGRAMS / "own_checks" / "optimizer_ascent_assert.py"


def order_check(message: str) -> Signature:
    return Signature("own-check", (("type", "AssertionError"), ("check", "assert"), ("reads", "order"),
                                   ("message", message)))


def no_run(text: str) -> RunResult:
    raise AssertionError("the program's own statements give every value: no run is needed")


def proposals(program: str, message: str, run=no_run) -> list[str]:
    start = OptimizerAlone()
    assert start.applies(order_check(message))
    return list(start.proposals(program, run))


def statements(source: str) -> list[str]:
    return [ast.unparse(s) for s in ast.parse(source).body]


def test_the_start_is_registered_after_the_reference_comparison():
    names = [kind.__name__ for kind in STARTS]
    assert names.index("OptimizerAlone") == names.index("ReferenceAlone") + 1


def test_it_applies_to_a_failing_ordering_check_alone():
    start = OptimizerAlone()
    assert start.applies(order_check("loss did not fall: N -> N"))
    close = Signature("own-check", (("type", "AssertionError"), ("check", "assert_allclose"), ("reads", "close")))
    assert not start.applies(close)
    assert not start.applies(Signature("nonfinite", (("type", "AssertionError"), ("check", "assert"))))


def test_the_equinox_loop_becomes_its_optimizer_on_a_toy_problem():
    """The benchmark's Equinox loop: the program's own `make_optimizer(1e-2, steps)` with `steps = 40`,
    no model, data or training step; smallest first: one update on a scalar, on an array, then a loop
    of two steps, and the program's own loop."""
    program = (BENCHMARKS / "equinox_optax_chain_loss_rises.py").read_text()
    found = proposals(program, "loss did not fall: N -> N")
    assert len(found) == 6 and [tokens(p) for p in found] == sorted(tokens(p) for p in found)
    first = statements(found[0])
    assert first[:5] == ["import jax", "import optax", first[2], "steps = 40",
                         "optimizer = make_optimizer(0.01, steps)"]
    assert first[2].startswith("def make_optimizer(peak_lr, steps):")
    assert first[5:] == ["f = lambda p: p * p", "params = 1.0",
                         "updates, opt_state = optimizer.update(jax.grad(f)(params), optimizer.init(params), params)",
                         "losses = [f(params), f(params + updates)]",
                         "assert losses[-1] < losses[0], f'loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}'"]
    assert "equinox" not in found[0] and "MLP" not in found[0] and "train_step" not in found[0]
    assert "params = jnp.ones(3)" in found[1] and "for step in range(2):" in found[2]
    loop = statements(found[2])
    assert loop[loop.index("losses = [f(params)]") + 1].splitlines() == [
        "for step in range(2):",
        "    updates, opt_state = optimizer.update(jax.grad(f)(params), opt_state, params)",
        "    params = params + updates", "    losses.append(f(params))"]
    assert any("for step in range(steps):" in p for p in found)


def test_a_check_on_two_loss_values_gets_the_first_before_training_and_the_last_after():
    found = proposals(ASCENT.read_text(), "loss went up: N -> N")
    first = statements(found[0])
    assert first[:4] == ["import jax", "import optax", "lr = 0.05",
                         "optimizer = optax.chain(optax.clip(1.0), optax.scale(lr))"]
    assert first[-3:-1] == ["initial_loss = f(params)", "final_loss = f(params + updates)"]
    looped = statements(next(p for p in found if "range(20)" in p))
    loop = next(k for k, s in enumerate(looped) if s.startswith("for step in range(20)"))
    assert looped[loop - 1] == "initial_loss = f(params)" and looped[loop + 1] == "final_loss = f(params)"


LINEN = '''
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state

LEARNING_RATE = 1e-2
NUM_EPOCHS = 30
THRESHOLD = 0.99


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(16)(x)))


def create_state(rng):
    model = MLP()
    params = model.init(rng, jnp.ones((1, 4)))["params"]
    schedule = optax.exponential_decay(LEARNING_RATE, 100, 0.9)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(), optax.scale_by_schedule(schedule))
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        return jnp.mean((state.apply_fn({"params": params}, x) - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def main():
    x = jax.random.normal(jax.random.PRNGKey(1), (64, 4))
    y = jnp.sum(x, axis=1, keepdims=True)
    state = create_state(jax.random.PRNGKey(0))
    initial = None
    for epoch in range(NUM_EPOCHS):
        state, loss = train_step(state, x, y)
        if initial is None:
            initial = loss
    assert loss < THRESHOLD * initial, f"loss {loss} not below {initial}"


if __name__ == "__main__":
    main()
'''


def test_a_linen_train_state_gives_the_optimizer_it_holds():
    """`TrainState.create(…, tx=tx)`: `tx` made in `create_state` from a schedule and a module-level
    constant; the check's constant stays the program's, the loop runs the program's epochs."""
    found = proposals(LINEN, "loss N not below N")
    first = statements(found[0])
    assert first[:5] == ["import jax", "import optax", "LEARNING_RATE = 0.01", "NUM_EPOCHS = 30", "THRESHOLD = 0.99"]
    assert "schedule = optax.exponential_decay(LEARNING_RATE, 100, 0.9)" in first
    assert any(s.startswith("tx = optax.chain(optax.clip_by_global_norm(1.0)") for s in first)
    assert "flax" not in found[0] and "MLP" not in found[0] and "create_state" not in found[0]
    assert first[-3:-1] == ["initial = f(params)", "loss = f(params + updates)"]
    looped = statements(next(p for p in found if "for epoch in range(NUM_EPOCHS):" in p))
    loop = next(k for k, s in enumerate(looped) if s.startswith("for epoch"))
    assert looped[loop - 1] == "initial = f(params)" and looped[loop + 1] == "loss = f(params)"


INLINE = '''
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state


def build_tx(lr):
    return optax.chain(optax.scale_by_adam(), optax.scale(lr))


def fit(x, y, epochs=20):
    model = nn.Dense(1)
    state = train_state.TrainState.create(apply_fn=model.apply, params=model.init(jax.random.PRNGKey(0), x)["params"],
                                          tx=build_tx(3e-3))
    history = []
    for _ in range(epochs):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2))(state.params)
        state = state.apply_gradients(grads=grads)
        history.append(loss)
    assert history[-1] < history[0], "diverged"


fit(jnp.ones((8, 2)), jnp.zeros((8, 1)))
'''


def test_an_optimizer_made_inside_the_call_that_holds_it_is_found():
    """`TrainState.create(…, tx=build_tx(3e-3))`: the optimizer is made where it is held, in a
    statement of the function that trains."""
    found = proposals(INLINE, "diverged")
    first = statements(found[0])
    assert "optimizer = build_tx(0.003)" in first and "flax" not in found[0], first


NNX = '''
import jax
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 1, rngs=rngs)

    def __call__(self, x):
        return self.linear(x)


def test_training_lowers_the_loss():
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.inject_hyperparams(optax.sgd)(learning_rate=-0.05), wrt=nnx.Param)
    x = jax.random.normal(jax.random.PRNGKey(0), (16, 3))
    history = {"loss": []}
    for _ in range(10):
        loss, grads = nnx.value_and_grad(lambda m: ((m(x) - 1.0) ** 2).mean())(model)
        optimizer.update(model, grads)
        history["loss"].append(loss)
    assert history["loss"][-1] < history["loss"][0]
'''


def test_an_nnx_optimizer_gives_the_transformation_it_wraps():
    """`nnx.Optimizer(model, tx)`: the transformation alone; the history kept under the one key the
    check reads is the list itself."""
    first = statements(proposals(NNX, "")[0])
    assert first[2] == "optimizer = optax.inject_hyperparams(optax.sgd)(learning_rate=-0.05)"
    assert "history = [f(params), f(params + updates)]" in first
    assert "Model" not in "\n".join(first) and first[-1] == "assert history[-1] < history[0]"


def test_a_history_under_two_keys_stays_a_dict():
    two = NNX.replace('assert history["loss"][-1] < history["loss"][0]',
                      'assert history["loss"][-1] < history["first"][0]')
    first = statements(proposals(two, "")[0])
    assert "history = {'loss': [f(params), f(params + updates)], 'first': [f(params), f(params + updates)]}" in first
    assert first[-1] == "assert history['loss'][-1] < history['first'][0]"


def test_no_proposal_without_an_optimizer_or_a_check_it_can_bind():
    assert proposals("import jax\nlosses = [1.0, 2.0]\nassert losses[-1] < losses[0]\n", "") == []
    no_loss = NNX.replace('assert history["loss"][-1] < history["loss"][0]', "assert len(x) < 3")
    assert proposals(no_loss, "") == []


PARAMETERS = '''
import dataclasses
import jax
import optax


@dataclasses.dataclass
class Config:
    learning_rate: float = 0.1
    steps: int = 5


def train(config, scale):
    optimizer = optax.sgd(-config.learning_rate * scale)
    w = jax.numpy.ones(2)
    state = optimizer.init(w)
    losses = []
    for step in range(config.steps):
        loss, grads = jax.value_and_grad(lambda w: (w ** 2).sum())(w)
        updates, state = optimizer.update(grads, state)
        w = optax.apply_updates(w, updates)
        losses.append(float(loss))
    assert losses[-1] < losses[0], f"loss rose: {losses}"


train(Config(), 2.0)
'''


def test_values_no_statement_gives_are_read_from_one_run(tmp_path):
    """A parameter (`scale`) gets a literal assignment and an attribute of one (`config.learning_rate`)
    its value, from one run of the script stopped where the optimizer is made."""
    runs = []

    def run(text: str) -> RunResult:
        runs.append(text)
        return run_text(text, tmp_path)

    found = proposals(PARAMETERS, "loss rose: <array>", run)
    assert len(runs) == 1 and found
    first = statements(found[0])
    assert first[:4] == ["import jax", "import optax", "scale = 2.0", "optimizer = optax.sgd(-0.1 * scale)"]
    assert "Config" not in found[0] and all("config" not in p for p in found) and len(found) == 4


def test_the_slice_leaves_parameters_unbound_and_sees_a_list_filled_later():
    tree = ast.parse(PARAMETERS)
    train = next(s for s in tree.body if isinstance(s, ast.FunctionDef))
    scope = scope_of(tree, train.body[0])
    assert isinstance(scope, Scope) and scope.parameters == {"config", "scale"}
    assert slice_for({"config", "optax"}, scope).unbound == {"config"}
    losses = next(s for s in train.body if isinstance(s, ast.Assign) and ast.unparse(s) == "losses = []")
    assert changed_elsewhere(tree, {"losses"}, [losses])
    assert not changed_elsewhere(tree, {"scale"}, [])


def test_the_proposal_fails_as_the_program_does_and_runs_through_once_the_optimizer_is_fixed(tmp_path):
    """Judged by the real oracle: the same signature, and the source level's guard on `order` checks
    (two different values compared) holds; with `optax.scale(-lr)` the proposal's check passes."""
    program = ASCENT.read_text()
    oracle = OwnCheck()
    original = run_text(program, tmp_path)
    wanted = oracle.classify(original)
    assert wanted is not None and wanted.get("reads") == "order"
    start = OptimizerAlone()
    assert start.applies(wanted)
    first = next(iter(start.proposals(program, no_run)))
    seen = run_text(first, tmp_path)
    assert oracle.same(wanted, oracle.classify(seen)), seen.output
    guard = guard_for(wanted, program, original, "candidate.py", lambda line: None)
    assert guard is not None and guard(first, seen.output)
    fixed = run_text(first.replace("optax.scale(lr)", "optax.scale(-lr)"), tmp_path)
    assert fixed.returncode == 0, fixed.output


@pytest.mark.slow
def test_the_source_level_starts_from_the_optimizer_alone(tmp_path):
    """End to end: `reducer reduce` on the plain-JAX program starts its passes from the optimizer on
    the toy problem (the log says so) and ends with the optimizer alone, failing the program's check."""
    out = tmp_path / "out"
    done = reducer_cli("reduce", ASCENT, "--out", out, "--max-time", "150", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert "optimizer-alone: starting from" in (out / "reduce.log").read_text()
    assert result["verified"].startswith("yes"), result
    repro = (out / "repro.py").read_text()
    assert ".update(" in repro and "loss_fn" not in repro and "random" not in repro, repro
    assert "loss went up" in run_text(repro, tmp_path).output


EXAMPLE_OPTIMIZERS = PROGRAMS / "own_checks" / "example_optimizers_ascent.py"


def test_jax_s_example_optimizers_are_stepped_by_the_functions_their_constructor_gives(tmp_path):
    """Another library than Optax, through its adapter: `opt_init, opt_update, get_params =
    optimizers.momentum(…)` is the construction, the toy is stepped by those three, the loop's range
    is read through rich's `track`; the proposal fails as the program does and runs through with the
    library's own fix (its step sizes positive)."""
    program = EXAMPLE_OPTIMIZERS.read_text()
    made = proposals(program, "training diverged: N -> N")
    first = statements(made[0])
    assert first[:5] == ["import jax", "from jax.example_libraries import optimizers", "LEARNING_RATE = 0.05",
                         "EPOCHS = 30", "opt_init, opt_update, get_params = optimizers.momentum(-LEARNING_RATE, mass=0.9)"]
    assert "opt_state = opt_update(0, jax.grad(f)(params), opt_init(params))" in first
    assert "losses = [f(params), f(get_params(opt_state))]" in first
    assert "for epoch in range(EPOCHS):" in made[-1] and "params = get_params(opt_state)" in made[-1]
    assert not any("loss_fn" in p or "track" in p for p in made)
    seen = run_text(made[0], tmp_path)
    assert seen.returncode == 1 and "training diverged" in seen.stderr
    assert run_text(counterfactual.fixed(made[0], "descend-example-libraries"), tmp_path).returncode == 0
    sig = order_check("training diverged: N -> N")
    assert counterfactual.modes(sig, program) == ["jit", "descend-example-libraries"]
