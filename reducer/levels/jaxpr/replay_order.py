"""Which captured calls a non-finite value is replayed from, and in which order (the traced level's
first replay of each costs a run of the fixes: the likeliest go first)."""
from __future__ import annotations

from oracles.outcome import Signature
from reducer.levels.jaxpr import program as jp
from reducer.cross_checks.gradients import FORWARD


def worth_replaying(specs: list[str], wanted: Signature) -> list[str]:
    """The captured calls `specs` in the order worth replaying for the non-finite value `wanted`."""
    return with_forward_alone(likeliest_first(specs, wanted), wanted)


def likeliest_first(specs: list[str], wanted: Signature) -> list[str]:
    """The captured calls in the order worth replaying for the non-finite value `wanted`: those that
    take a derivative (the one it is found in, or for a value made forward any: a `where` hides it
    from the value itself, not from its derivative), then those replayed on the values the program
    gave them, then the smaller."""
    def key(text: str) -> tuple:
        spec = jp.parse(text)
        kinds = set(spec.kinds())
        takes = {"grad": jp.GRAD_LIKE | {"vjp"}, "jvp": FORWARD}.get(wanted.get("in"),
                                                                          jp.GRAD_LIKE | {"vjp", "jvp"})
        guessed = sum(a.values is None for a in spec.args)
        return (not kinds & takes, guessed > 0, jp.count_eqns(spec.jaxpr))

    return sorted(specs, key=key)


def with_forward_alone(specs: list[str], wanted: Signature) -> list[str]:
    """`specs`, then, for a value made forward, each `value_and_grad` call as its value alone: the
    program checks the value, and a gradient taken beside it can stay non-finite under the value's
    fix (a log-sigmoid written by hand: its `exp`'s Inf times a zero cotangent), so that no
    operation's fix takes every non-finite output away."""
    if wanted.get("in") != "forward":
        return specs
    alone = []
    for text in specs:
        spec = jp.parse(text)
        if any(t.kind == "value_and_grad" for t in spec.transforms):
            spec.transforms = [t for t in spec.transforms if t.kind != "value_and_grad"]
            spec.jaxpr.dce()
            alone.append(spec.to_json())
    return specs + [s for s in dict.fromkeys(alone) if s not in specs]
