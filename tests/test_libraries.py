"""What the reducer knows of the libraries users train with (`reducer.libraries`): which names a
program's imports give each optimizer library, which of its functions make an optimizer, and the
range a progress bar wraps."""
import ast

from reducer import libraries
from reducer.libraries.example_optimizers import ExampleOptimizers
from reducer.libraries.optax import Optax


def test_the_names_an_import_gives_a_library():
    tree = ast.parse("import optax as ox\nfrom optax.contrib import muon\nimport optaxx\n"
                     "from jax.example_libraries import optimizers\n"
                     "from jax.example_libraries.optimizers import adam as Adam\n"
                     "import jax.example_libraries.optimizers as jopt\nimport jax\n")
    assert Optax().bound(tree) == {"ox", "muon"}
    assert ExampleOptimizers().bound(tree) == {"optimizers", "Adam", "jopt"}


def test_a_constructor_makes_an_optimizer_and_a_schedule_does_not():
    optax, example = Optax(), ExampleOptimizers()
    assert optax.makes("adamw") and optax.makes("chain") and not optax.makes("warmup_cosine_decay_schedule")
    assert not optax.makes("apply_updates") and not optax.makes("softmax_cross_entropy")
    assert example.makes("momentum") and example.makes("adam")
    assert not example.makes("exponential_decay") and not example.makes("clip_grads") and not example.makes("l2_norm")


def test_each_library_names_its_own_fix():
    assert set(libraries.fixes()) == {"descend", "descend-example-libraries"}
    assert ExampleOptimizers().used_in("from jax.example_libraries import optimizers")
    assert not ExampleOptimizers().used_in("import optax") and Optax().used_in("import optax")


def test_the_range_a_progress_bar_wraps():
    def loop(text):
        return ast.unparse(libraries.loop_range(ast.parse(text, mode="eval").body))

    assert loop("tqdm(range(10), desc='epochs')") == "range(10)"
    assert loop("tqdm.trange(5)") == "range(5)"
    assert loop("track(range(n), description='fitting')") == "range(n)"
    assert loop("range(3)") == "range(3)" and loop("enumerate(loader)") == "enumerate(loader)"
