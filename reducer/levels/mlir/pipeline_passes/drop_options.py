"""Drop pass options: all options of a pass, then each option, then chunks of the items of a list
valued option (`patterns=a;b;c`) or of a nested pipeline given as a quoted option value
(`postpasses="canonicalize,cse"`). Activity lists (`argTys=…`) keep their length (it must match
the function), and enzyme-wrap keeps `infn`: without it the pass has nothing to differentiate.
A change point is (pass position, option positions), or chunks of a list-valued option's items."""
from __future__ import annotations

import copy

from reducer.levels.mlir import pipeline as pl
from reducer.passes import Chunk, Chunks, ReductionPass

#: options whose comma-separated values are per-argument lists that must keep their length
FIXED_LISTS = {"argTys", "retTys"}
#: options a pass is meaningless without: which function enzyme-wrap differentiates
REQUIRED = {"enzyme-wrap": {"infn"}}


def droppable(p: pl.PassSpec) -> list[int]:
    keep = REQUIRED.get(p.name, set())
    return [j for j, opt in enumerate(p.options) if opt.partition("=")[0] not in keep]


def all_passes(passes: list[pl.PassSpec]):
    for p in passes:
        yield p
        if p.nested:
            yield from all_passes(p.nested)


def _items(value: str) -> tuple[list[str], str, str] | None:
    """The items of a list-valued option value, their separator, and the quote around them."""
    quote = '"' if len(value) >= 2 and value[0] == value[-1] == '"' else ""
    inner = value[1:-1] if quote else value
    for sep in (";", ","):
        try:
            parts = pl._split_top(inner, sep)
        except ValueError:
            return None
        if len(parts) > 1:
            return parts, sep, quote
    return None


class DropOptions(ReductionPass):
    name = "drop-options"

    def points(self, passes: list[pl.PassSpec]) -> list:
        flat = list(all_passes(passes))
        found = []
        for k, p in enumerate(flat):
            positions = droppable(p)
            found += ([(k, positions)] if len(positions) > 1 else []) + [(k, [j]) for j in positions]
        for k, p in enumerate(flat):
            for j, opt in enumerate(p.options):
                key, eq, value = opt.partition("=")
                items = _items(value) if eq and key not in FIXED_LISTS else None
                if items:
                    found.append(Chunks((k, j), len(items[0])))
        return found

    def apply(self, passes: list[pl.PassSpec], point) -> str | None:
        fresh = copy.deepcopy(passes)
        flat = list(all_passes(fresh))
        if not isinstance(point, Chunk):
            k, positions = point
            flat[k].options = [o for j, o in enumerate(flat[k].options) if j not in positions]
            return pl.render(fresh)
        k, j = point.where
        key, _, value = flat[k].options[j].partition("=")
        items, sep, quote = _items(value)
        if point.stop - point.start == len(items):
            return None  # the whole value: dropping the option already covers it
        kept = items[:point.start] + items[point.stop:]
        flat[k].options[j] = f"{key}={quote}{sep.join(kept)}{quote}"
        return pl.render(fresh)
