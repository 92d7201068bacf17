"""Inline calls: put a copy of the callee's body in place of a `func.call`, and drop the callee when
no call is left. Every call at once first (one level), then one call at a time. A change point is
the positions of the calls."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def inline(e: ir_tools.Edit, call) -> bool:
    from jaxlib.mlir import ir

    call = operation(call)
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = e.function(name)
    caller = ir_tools.function_of(call)
    if callee is None or caller is None or len(callee.regions[0].blocks) == 0 or caller == callee:
        return False
    copy = callee.clone(ip=False)
    ir_tools.splice(copy.regions[0].blocks[0], call)
    copy.erase()
    return True


def drop_uncalled(e: ir_tools.Edit, names: set[str]) -> None:
    """Erase the functions among `names` that nothing refers to any more."""
    used, entry = ir_tools.used_symbols(e.module), e.entry_name()
    for name in names:
        f = e.function(name)
        if f is not None and name not in used and name != entry:
            f.erase()


class InlineCalls(ReductionPass):
    name = "inline-calls"

    def points(self, item: ir_tools.Item) -> list[list[int]]:
        calls = [i for i, op in enumerate(item.ops) if op.name == "func.call"]
        return ([calls] if len(calls) > 1 else []) + [[i] for i in calls]

    def apply(self, item: ir_tools.Item, group) -> str | None:
        from jaxlib.mlir import ir

        with item.edit() as e:
            targets = [e.ops[i] for i in group]
            callees = {ir.FlatSymbolRefAttr(c.attributes["callee"]).value for c in targets}
            if not all([inline(e, call) for call in targets]):
                return None
            drop_uncalled(e, callees)
            return e.text()
