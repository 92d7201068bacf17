"""What made the 0 a non-finite value came from (`reducer.faults.cause`): which kinds are looked for,
in which order, and the one run that rules a kind out. The runs themselves are real elsewhere
(`test_value_origin_loopholes.py`, `test_nonfinite_traced.py`); here `fixed_passes` records what
it is asked."""
from reducer.faults import cause, safe_ops


def asked(passing: set):
    calls = []

    def fixed_passes(ops, how):
        calls.append((ops, how))
        return (ops if isinstance(ops, str) else tuple(ops)) in passing

    return fixed_passes, calls


def test_a_nan_is_given_a_cause_only_at_its_operations_pole():
    fixed_passes, calls = asked({"exp"})
    assert cause.of("nan", "forward", "sqrt", "edge", fixed_passes, fixed_passes) == "" and not calls
    assert cause.of("nan", "grad", "log", "pole", fixed_passes, fixed_passes) == "" and not calls
    assert cause.of("+inf", "forward", "exp", "", fixed_passes, fixed_passes) == cause.NONE and not calls


def test_each_kind_is_ruled_out_by_one_run_of_all_its_fixes_at_once():
    fixed_passes, calls = asked(set())
    assert cause.of("nan", "forward", "log", "pole", fixed_passes, fixed_passes) == ""
    assert [how for _, how in calls] == [safe_ops.UNDERFLOW, safe_ops.DERIVATIVE]  # two runs, not nine
    assert cause.of("+inf", "forward", "log", "pole", fixed_passes, fixed_passes) == cause.NONE


def test_an_overflow_is_looked_for_after_the_underflows_and_named_by_its_operation():
    overflowing = tuple(o for o in safe_ops.OVERFLOW_ONLY)
    fixed_passes, calls = asked({overflowing, "exp"})
    assert cause.of("nan", "forward", "log", "pole", fixed_passes, fixed_passes) == "exp-overflow"
    assert calls[-1] == ("exp", safe_ops.DERIVATIVE)
    assert cause.fix("exp-overflow") == (("exp",), safe_ops.DERIVATIVE)
    assert cause.fix("exp-underflow") == (("exp",), safe_ops.UNDERFLOW)
    # off a pole, an Inf's cause is an underflow's alone
    fixed_passes, calls = asked({overflowing, "exp"})
    assert cause.of("+inf", "forward", "log", "", fixed_passes, fixed_passes) == cause.NONE


def test_a_candidate_is_held_to_the_originals_cause_in_one_run():
    fixed_passes, calls = asked({("exp",)})  # a cause's operations are asked for together, one or several
    assert cause.held("exp-overflow", "nan", "forward", "log", "pole", fixed_passes) == "exp-overflow"
    assert calls == [(("exp",), safe_ops.DERIVATIVE)]
    fixed_passes, calls = asked(set())
    assert cause.held("exp-overflow", "nan", "forward", "log", "pole", fixed_passes) == ""
    assert cause.held("exp-underflow", "+inf", "forward", "log", "pole", fixed_passes) == cause.NONE
    assert cause.held("exp-overflow", "+inf", "forward", "log", "", fixed_passes) == cause.NONE  # not looked for
    assert not cause.named("") and not cause.named(cause.NONE) and cause.named("exp-underflow")


def test_a_cause_only_several_fixes_together_take_away_names_the_fewest_of_them():
    """A forward recursion whose matrix product and product each round some values to 0: no one fix
    makes the program run through, both together do; the cause names those two, and a candidate is
    held to them together."""
    needed = {"mul", "dot_general"}

    def together(ops, how):
        return needed <= set(ops)

    def alone(op, how):
        return needed <= ({op} if isinstance(op, str) else set(op))

    found = cause.of("-inf", "forward", "log", "pole", alone, together)
    assert found == "mul+dot_general-underflow"
    assert cause.fix(found) == (("mul", "dot_general"), safe_ops.UNDERFLOW)
    assert cause.held(found, "-inf", "forward", "log", "pole", alone) == found
    assert cause.held(found, "-inf", "forward", "log", "pole", lambda op, how: False) == cause.NONE
    assert cause.of("-inf", "forward", "log", "pole", alone, lambda ops, how: False) == cause.NONE
