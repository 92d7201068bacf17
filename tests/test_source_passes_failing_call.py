"""The source passes for failures raised by the program's own code on traced values: calling the
failing function directly (its frames read from a real traceback), keeping only a condition's
conversion to `bool`, and the existing passes taking that down to `jax.jit(bool)(0)` (every
candidate run in-process on real JAX)."""
import ast
import traceback

import jax
from reducer.engine import Engine, Problem
from reducer.levels.source.passes import source_passes
from reducer.levels.source.passes._failure_site import frames
from reducer.levels.source.passes.bare_conversion import BareConversion
from reducer.levels.source.passes.call_failing_function import CallFailingFunction
from reducer.levels.source.passes.def_to_lambda import DefToLambda
from reducer.levels.source.representation import PythonSource, Script

TRAINING = '''
import jax
import jax.numpy as jnp
import numpy as np

WARMUP = 3
SCALE = WARMUP * 2
DATA = np.ones(3)


def ramp(step):
    return step / SCALE


def warmup(step):
    if step < WARMUP:
        return ramp(step)
    return 1.0


def loss(w, x, step):
    return warmup(step) * jnp.sum((w * x) ** 2)


@jax.jit
def train_step(w, x, step):
    return jax.grad(loss)(w, x, step)


def main():
    w = jnp.ones(3)
    for step in range(3):
        w = w - train_step(w, jnp.asarray(DATA), step)


main()
'''


def norm(src: str) -> str:
    return ast.unparse(ast.parse(src)) + "\n"


def raised(program: str, name: str = "prog.py") -> tuple[Exception | None, str]:
    """What `program` raises, run in this process, and its traceback (None, "" when nothing)."""
    try:
        exec(compile(program, name, "exec"), {"__name__": "__main__"})
    except Exception as e:  # noqa: BLE001 - any failure's traceback is what the passes read
        return e, traceback.format_exc()
    return None, ""


def run(program: str) -> str:
    return raised(program)[1]


def tracer_bool(program: str) -> bool:
    return isinstance(raised(program)[0], jax.errors.TracerBoolConversionError)


def failed_script(program: str) -> Script:
    text = norm(program)
    return Script(text, frames(run(text), "prog.py"))


def test_the_failing_function_is_called_alone_under_jit_with_what_it_reads():
    script = failed_script(TRAINING)
    assert [f for _, f in script.failure] == ["<module>", "main", "train_step", "loss", "warmup"]
    before = ast.dump(script.tree)
    candidates = [CallFailingFunction().apply(script, point) for point in CallFailingFunction().points(script)]
    assert ast.dump(script.tree) == before and len(set(candidates)) == len(candidates)
    # the innermost function first, with the constants and the helper it reads (transitively), not numpy
    assert candidates[0] == norm('''
import jax
WARMUP = 3
SCALE = WARMUP * 2

def ramp(step):
    return step / SCALE

def warmup(step):
    if step < WARMUP:
        return ramp(step)
    return 1.0
jax.jit(warmup)(1.0)
''')
    assert tracer_bool(candidates[0])
    assert "warmup(1.0)\n" in candidates[2] and "jax.jit" not in candidates[2]
    assert not tracer_bool(candidates[2])  # called without jit, the condition is a plain float
    # the outer frames follow; `train_step` also with its `@jax.jit` kept
    assert any("@jax.jit\ndef train_step" in c and c.endswith("train_step(1.0, 1.0, 1.0)\n") for c in candidates)


def test_jax_is_imported_for_the_jit_form_and_only_required_parameters_get_values():
    program = "import math\n\ndef f(a, b=2, *, c, d=4):\n    return math.sqrt(a)\n\nf(-1.0, c=0)\n"
    script = failed_script(program)
    got = [CallFailingFunction().apply(script, point) for point in CallFailingFunction().points(script)]
    assert got[0] == norm("import jax\nimport math\ndef f(a, b=2, *, c, d=4):\n    return math.sqrt(a)\n"
                          "jax.jit(f)(1.0, c=1.0)")
    assert norm("import math\ndef f(a, b=2, *, c, d=4):\n    return math.sqrt(a)\nf(1, c=1)") in got


def test_no_failure_or_a_failure_in_a_method_gives_no_call():
    assert CallFailingFunction().points(Script(norm(TRAINING))) == []
    method = "class M:\n    def __call__(self, x):\n        return 1 / x\n\nM()(0)\n"
    assert CallFailingFunction().points(failed_script(method)) == []


def test_a_condition_becomes_its_bare_conversion():
    p = BareConversion()
    src = "def f(x):\n    if x > 0:\n        y = 1\n    else:\n        y = 2\n    return y\n"
    got = list(p.candidates(norm(src)))
    assert got == [norm("def f(x):\n    return bool(x > 0)"), norm("def f(x):\n    bool(x > 0)\n    return y")]
    assert list(p.candidates(norm("while n < 3:\n    n += 1\n"))) == [norm("bool(n < 3)")]
    assert list(p.candidates(norm("y = a if c else b\n"))) == [norm("y = bool(c)")]
    assert list(p.candidates(norm("y = c and d or e\n"))) == [norm("y = bool(c and d)"), norm("y = bool(c) or e")]


def test_the_bare_conversion_keeps_a_tracer_bool_failure():
    script = Script(norm("import jax\ndef f(x):\n    if x > 0:\n        return x\n    return -x\njax.jit(f)(1.0)"))
    p = BareConversion()
    assert all(tracer_bool(p.apply(script, point)) for point in p.points(script))


def test_a_training_step_with_a_python_if_on_a_tracer_reduces_to_jit_of_bool():
    """Every pass, in-process on real JAX, from the training program's failure to `jax.jit(bool)(0)`."""
    rep = PythonSource()

    def test(candidate, cancel):
        error, out = raised(candidate)
        kept = isinstance(error, jax.errors.TracerBoolConversionError)
        if kept:
            rep.note_failure(candidate, out, "prog.py")
        return kept

    start = rep.normalize(TRAINING)
    assert test(start, None)
    best = Engine(Problem(rep, test), source_passes()).reduce(start)
    assert best == norm("import jax\njax.jit(bool)(0)")



def test_a_function_of_one_expression_statement_becomes_a_lambda():
    got = list(DefToLambda().candidates(norm("def f(step):\n    bool(step)\njax.jit(f)(0)\n")))
    assert got == [norm("f = lambda step: bool(step)\njax.jit(f)(0)")]


def test_a_helper_defined_after_the_failing_function_is_kept_and_the_main_code_is_not():
    program = "def f(x):\n    return g(x) + LIMIT\ndef g(x):\n    return 1 / x\nLIMIT = 2\nmodel = f(0)\nprint(model)\n"
    script = failed_script(program)
    assert [f for _, f in script.failure] == ["<module>", "f", "g"]
    got = [CallFailingFunction().apply(script, point) for point in CallFailingFunction().points(script)]
    assert got[2] == norm("def g(x):\n    return 1 / x\ng(1.0)")
    assert norm("def g(x):\n    return 1 / x\nLIMIT = 2\ndef f(x):\n    return g(x) + LIMIT\nf(1)") in got


def test_a_nested_failing_function_moves_to_the_module_and_a_method_is_left_alone():
    program = '''
import jax

LIMIT = 2.0


def main():
    scale = 3.0

    def clip(x):
        while x > LIMIT:
            x = x / 2
        return x

    jax.jit(clip)(scale)


class Model:
    def step(self, x):
        return 1 / x


main()
Model().step(0)
'''
    script = failed_script(program)
    assert [f for _, f in script.failure] == ["<module>", "main", "clip"]
    candidates = [CallFailingFunction().apply(script, point) for point in CallFailingFunction().points(script)]
    assert candidates[0] == norm("import jax\nLIMIT = 2.0\ndef clip(x):\n    while x > LIMIT:\n        x = x / 2\n"
                                 "    return x\njax.jit(clip)(1.0)")
    assert tracer_bool(candidates[0])
    method = failed_script(program.replace("\nmain()\n", "\n"))
    assert [f for _, f in method.failure] == ["<module>", "step"]
    assert CallFailingFunction().points(method) == []


def test_only_the_condition_that_raised_is_tried_when_the_traceback_is_known():
    program = ("import jax\ndef f(x):\n    if x is None:\n        return 0\n    y = x if x > 0 else -x\n"
               "    return y\njax.jit(f)(1.0)\n")
    script = failed_script(program)
    got = [BareConversion().apply(script, point) for point in BareConversion().points(script)]
    assert got == [norm("import jax\ndef f(x):\n    if x is None:\n        return 0\n    y = bool(x > 0)\n"
                        "    return y\njax.jit(f)(1.0)")]
    assert tracer_bool(got[0])
    assert len(BareConversion().points(Script(script.text))) == 3  # not known: every condition
