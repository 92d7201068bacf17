"""The non-finite family's judgement in one place (`oracles.nonfinite`): the kinds a check read, the
fields a replay must show as they are, and the verdict on a replay's findings; the fixes the level
writes are the formulas the family holds."""
from oracles import nonfinite
from oracles.outcome import Signature
from reducer.faults import stable_fix

WANTED = nonfinite.signature("AssertionError", "assert", (("value", "+inf"), ("in", "forward"), ("op", "log"),
                                                          ("fix", "none"), ("cause", "exp-underflow"),
                                                          ("from", "log")), "")


def test_a_replay_is_the_same_failure_only_where_it_was_made_alike():
    found = {"value": "+inf", "in": "forward", "op": "log", "cause": "exp-underflow"}
    same, seen = nonfinite.same_replay(WANTED, found)
    assert same and seen.family == "nonfinite" and seen.get("op") == "log"
    for change in ({"op": "exp"}, {"in": "grad"}, {"value": "nan"}, {"cause": ""}):
        assert not nonfinite.same_replay(WANTED, {**found, **change})[0], change
    assert nonfinite.same_replay(WANTED, {**found, "value": "+inf,nan"})[0]  # more kinds than the check read
    assert nonfinite.same_replay(WANTED, None) == (False, None)


def test_what_is_held_follows_what_the_origin_names():
    assert nonfinite.held_fields({"fix": "none", "cause": "none"}) == ("in", "op")
    assert nonfinite.held_fields({"fix": "softplus", "cause": "exp-underflow"}) == ("in", "op", "fix", "cause")
    assert nonfinite.covers("-inf", "inf") and not nonfinite.covers("+inf", "nan") and not nonfinite.covers("", "")
    assert nonfinite.same_point({"point": "pole"}, {}) and not nonfinite.same_point({"point": "pole"}, {"point": "edge"})


def test_the_stable_formulas_the_family_holds_are_those_the_level_writes():
    assert set(nonfinite.STABLE_FORMULAS) == set(stable_fix.FORMULAS)
    assert isinstance(WANTED, Signature) and WANTED.title == "A +Inf from `log` fails the program's `assert`"



#: `bessel_jn`'s recurrence (a `scan` in its body) makes the NaN, and no fix of the program's takes it away
INSIDE = nonfinite.signature("AssertionError", "assert_allclose", (("value", "nan"), ("in", "forward"), ("op", "scan"),
                                                                   ("fix", "none"), ("from", "bessel_jn")), "")


def test_a_value_made_inside_a_public_call_no_fix_takes_away_is_that_calls():
    """The call is named, for the guard that holds candidates to it (`reducer.faults.origin`, tested on
    real runs in test_value_origin_loopholes.py) and for whose the report says it is; `from` stays
    out of the failure's identity (how it is read from a traceback may change, and the corpus keeps it)."""
    from oracles.own_check import OwnCheck

    assert nonfinite.inside_call(INSIDE)
    for at in ({"fix": "none", "op": "log", "from": "log"}, {"fix": "inner-where", "op": "sqrt", "from": "norm"},
               {"fix": "none", "op": "scan", "from": ""}, {"op": "scan", "from": "bessel_jn"}):
        assert not nonfinite.inside_call(at), at
    oracle = OwnCheck()
    assert oracle.owner(INSIDE) == "jax" and oracle.owner(WANTED) == "program"
    broken = Signature("nonfinite", INSIDE.fields + (("contract", "broken"),), "")
    assert oracle.owner(broken) == "program"  # the program gave the call an input its documentation rules out
    elsewhere = Signature("nonfinite", tuple((k, "jn" if k == "from" else v) for k, v in INSIDE.fields), "")
    assert oracle.same(INSIDE, elsewhere)


def test_the_report_sends_a_value_made_inside_a_public_call_to_jax():
    from reducer import bug_report

    from reducer import filing

    assert filing.keywords(INSIDE).startswith("bessel_jn nan scan")
    words = bug_report._value_words(INSIDE)
    assert "inside `bessel_jn`" in words and "JAX's to answer" in words and "most often the program's" not in words
    assert "most often the program's" in bug_report._value_words(WANTED)
