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
