"""Drop pass options: all options of a pass, then each option, then chunks of the items of a list
valued option (`patterns=a;b;c`) or of a nested pipeline given as a quoted option value
(`postpasses="canonicalize,cse"`). Activity lists (`argTys=…`) keep their length (it must match
the function), and enzyme-wrap keeps `infn`: without it the pass has nothing to differentiate."""
from __future__ import annotations

from reducer.levels.mlir import pipeline as pl
from reducer.engine import chunk_order as chunks

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


class DropOptions:
    name = "drop-options"

    def candidates(self, program: str):
        try:
            passes = pl.parse(program)
        except ValueError:
            return
        flat = list(all_passes(passes))
        for k, p in enumerate(flat):
            positions = droppable(p)
            if len(positions) > 1:
                fresh = pl.parse(program)
                target = list(all_passes(fresh))[k]
                target.options = [o for j, o in enumerate(target.options) if j not in positions]
                yield pl.render(fresh)
            for j in positions:
                fresh = pl.parse(program)
                del list(all_passes(fresh))[k].options[j]
                yield pl.render(fresh)
        for k, p in enumerate(flat):
            for j, opt in enumerate(p.options):
                key, eq, value = opt.partition("=")
                found = _items(value) if eq and key not in FIXED_LISTS else None
                if not found:
                    continue
                items, sep, quote = found
                for start, stop in chunks(len(items)):
                    if stop - start == len(items):
                        continue  # the whole value: dropping the option already covers it
                    kept = items[:start] + items[stop:]
                    fresh = pl.parse(program)
                    list(all_passes(fresh))[k].options[j] = f"{key}={quote}{sep.join(kept)}{quote}"
                    yield pl.render(fresh)
