"""The transformation a non-finite value was made in, told by how much of it the forward fix takes
away (`safe_ops.FORWARD`: the operation's forward value made finite alone): all of it, a value made
forward; some of it, a forward value read beside a derivative's (the `where` trap with its `where`
gone); none of it, a value the derivative made."""
from __future__ import annotations

from oracles import nonfinite as nonfinite_kinds
from reducer.faults import nonfinite

#: how much of the checked value the forward fix takes away: all of it, some of it, none of it
ALL, SOME, NONE = "all", "some", "none"


def taken_away(after: str | None, left: int | None, kind: str, count: int | None) -> str:
    """How much of a checked value of `kind` (`count` non-finite elements) the forward fix took away,
    by what the check read after it: `after` the kinds ("" when the program ran through, None when
    unknown) and `left` how many."""
    if after == "" or after is not None and not nonfinite_kinds.covers(after, kind):
        return ALL
    return SOME if count is not None and left is not None and left < count else NONE


def made_in(share: str, mode: str) -> str:
    """The transformation a value was made in, by how much of it the forward fix takes away (`share`)
    and the derivative the program takes (`mode`): `forward`, `grad`, or `forward,grad` for a
    forward value that the check reads beside a derivative's."""
    return {ALL: "forward", SOME: f"forward,{mode}"}.get(share, mode)


def share_of(where: str) -> str:
    """The share of the value that the forward fix takes away, for a value made in `where`."""
    return ALL if where == "forward" else SOME if where.startswith("forward,") else NONE


def evidence(found: dict, share: str) -> str:
    """Why the value comes from the operation `found` names, whose inner `where` makes the program run
    through, and what its forward fix alone took away (`share`), in the words of the log and the report."""
    fix = "its input kept inside its domain where its value or derivative is not finite (the inner `where`)" + {
        ALL: "; its forward value made finite alone takes the checked value away",
        SOME: "; its forward value made finite alone takes some of the checked values away, not all"}.get(
        share, "; with its forward value alone made finite, the value is still there")
    kind = "a NaN" if found["kind"] == "nan" else f"an Inf ({found['kind']})" if "," not in found["kind"] else \
        f"non-finite values ({found['kind']})"
    return (f"The program checks {kind}; it runs through with `{found['op']}` fixed ({fix}), so that is where the "
            f"value comes from. " + nonfinite.evidence(found))
