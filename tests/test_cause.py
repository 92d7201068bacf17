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
    assert cause.of("nan", "grad", "log", "", fixed_passes, fixed_passes) == "" and not calls
    assert cause.of("+inf", "forward", "exp", "", fixed_passes, fixed_passes) == cause.NONE and not calls


def test_a_derivatives_value_at_a_pole_or_an_edge_is_given_the_cause_of_the_0_there():
    """`log`'s derivative at a 0 that a sigmoid's rounding made, `sqrt`'s at a variance of 0 that an
    underflow made: looked for as a forward value's at its pole; none found is none named."""
    fixed_passes, calls = asked({()})  # the program made float64 runs through as it is
    assert cause.of("nan", "grad", "log", "pole", fixed_passes, fixed_passes) == "rounding"
    assert [how for _, how in calls] == [safe_ops.UNDERFLOW, safe_ops.DERIVATIVE, safe_ops.WIDEN]
    fixed_passes, calls = asked({safe_ops.UNDERFLOWING, "exp"})
    assert cause.of("+inf", "jvp", "sqrt", "edge", fixed_passes, fixed_passes) == "exp-underflow"
    fixed_passes, calls = asked(set())
    assert cause.of("+inf", "grad", "log", "pole", fixed_passes, fixed_passes) == ""  # not `none`: a derivative's
    assert cause.of("+inf", "grad", "exp", "pole", fixed_passes, fixed_passes) == ""
    assert cause.held("rounding", "nan", "grad", "log", "pole", asked({()})[0]) == "rounding"
    assert cause.held("rounding", "nan", "grad", "log", "pole", asked(set())[0]) == ""


def test_each_kind_is_ruled_out_by_one_run_of_all_its_fixes_at_once():
    fixed_passes, calls = asked(set())
    assert cause.of("nan", "forward", "log", "pole", fixed_passes, fixed_passes) == ""
    assert [how for _, how in calls] == [safe_ops.UNDERFLOW, safe_ops.DERIVATIVE] + [safe_ops.WIDEN] * 2  # not 30
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


def test_a_value_at_a_pole_after_no_underflow_or_overflow_is_given_a_rounding_cause():
    """`log(1 - sigmoid(z))` where the sigmoid rounds to 1: the 0 is the sigmoid's rounding."""
    every = tuple(o for o in safe_ops.ROUNDING if o != "log")
    fixed_passes, calls = asked({every, "logistic"})
    assert cause.of("nan", "forward", "log", "pole", fixed_passes, fixed_passes) == "logistic-rounding"
    assert [how for _, how in calls[:3]] == [safe_ops.UNDERFLOW, safe_ops.DERIVATIVE, safe_ops.WIDEN]
    underflowing = tuple(o for o in safe_ops.UNDERFLOWING if o != "log")
    fixed_passes, _ = asked({underflowing, every, "logistic", "exp"})  # an underflow float64 takes away too is one
    assert cause.of("-inf", "forward", "log", "pole", fixed_passes, fixed_passes) == "exp-underflow"


def test_a_nan_outside_the_domain_is_given_the_arithmetic_whose_rounding_put_it_there():
    """One run with all of the rounding operations in float64, one with the program made float64 alone,
    then each operation alone in turn: the first that is enough names the cause."""
    every = tuple(o for o in safe_ops.ROUNDING if o != "sqrt")
    fixed_passes, calls = asked({every, "integer_pow"})
    assert cause.of("nan", "forward", "sqrt", "outside", fixed_passes, fixed_passes) == "integer_pow-rounding"
    assert calls[:3] == [((), safe_ops.WIDEN), (every, safe_ops.WIDEN), ("integer_pow", safe_ops.WIDEN)]
    assert cause.fix("integer_pow-rounding") == (("integer_pow",), safe_ops.WIDEN)
    fixed_passes, calls = asked(set())  # not rounding: two runs rule it out, and a NaN then has no cause
    assert cause.of("nan", "forward", "sqrt", "outside", fixed_passes, fixed_passes) == "" and len(calls) == 2
    fixed_passes, _ = asked({every})  # an Inf is no rounding's: its cause is an underflow's or none
    assert cause.of("+inf", "forward", "log", "outside", fixed_passes, fixed_passes) == cause.NONE


def test_a_program_made_float64_that_runs_through_as_it_is_is_rounding_with_no_operation_named():
    every = tuple(o for o in safe_ops.ROUNDING if o != "sqrt")
    fixed_passes, calls = asked({every, ()})
    assert cause.of("nan", "forward", "sqrt", "", fixed_passes, fixed_passes) == "rounding"
    assert cause.fix("rounding") == ((), safe_ops.WIDEN) and cause.is_rounding("rounding")
    assert not cause.is_rounding("exp-underflow")


def test_a_rounding_cause_looks_only_at_the_operations_the_program_binds_and_names_the_fewest():
    """The run with all of them says which the program binds: the rest are not tried."""
    every = tuple(o for o in safe_ops.ROUNDING if o != "sqrt")
    fixed_passes, calls = asked({every, ("reduce_sum", "div")})
    found = cause.rounded("nan", "sqrt", fixed_passes, among=lambda: {"reduce_sum", "div", "sqrt"})
    assert found == "reduce_sum+div-rounding"
    assert {o for ops, _ in calls[2:] for o in ((ops,) if isinstance(ops, str) else ops)} <= {"reduce_sum", "div"}
    assert cause.rounded("+inf", "log", fixed_passes) == ""  # a NaN's alone


def test_a_candidate_is_held_to_a_rounding_cause_in_one_run():
    fixed_passes, calls = asked({("integer_pow",)})
    assert cause.held("integer_pow-rounding", "nan", "forward", "sqrt", "", fixed_passes) == "integer_pow-rounding"
    assert calls == [(("integer_pow",), safe_ops.WIDEN)]
    fixed_passes, calls = asked(set())  # `sqrt(-1.0)` written in: float64 arithmetic leaves it below 0
    assert cause.held("integer_pow-rounding", "nan", "forward", "sqrt", "outside", fixed_passes) == ""
