"""Inline calls: put a copy of the callee's body in place of a `func.call`, and drop the callee when
no call is left. Every call at once first (one level), then one call at a time."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir.passes import _ir


def inline(e: _ir.Edit, call) -> bool:
    from jaxlib.mlir import ir

    call = operation(call)
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = e.function(name)
    caller = _ir.function_of(call)
    if callee is None or caller is None or len(callee.regions[0].blocks) == 0 or caller == callee:
        return False
    copy = callee.clone(ip=False)
    block = copy.regions[0].blocks[0]
    for arg, value in zip(block.arguments, call.operands):
        arg.replace_all_uses_with(value)
    ops = [operation(o) for o in block.operations]
    for o in ops[:-1]:
        o.move_before(call)
    for result, value in zip(call.results, ops[-1].operands):
        result.replace_all_uses_with(value)
    call.erase()
    copy.erase()
    return True


def drop_uncalled(e: _ir.Edit, names: set[str]) -> None:
    """Erase the functions among `names` that nothing refers to any more."""
    used, entry = _ir.used_symbols(e.module), e.entry_name()
    for name in names:
        f = e.function(name)
        if f is not None and name not in used and name != entry:
            f.erase()


class InlineCalls:
    name = "inline-calls"

    def candidates(self, program: str):
        base = _ir.Edit(program)
        if not base.ok:
            return
        calls = [i for i, op in enumerate(base.ops) if op.name == "func.call"]
        groups = ([calls] if len(calls) > 1 else []) + [[i] for i in calls]
        for group in groups:
            with _ir.Edit(program) as e:
                from jaxlib.mlir import ir

                targets = [e.ops[i] for i in group]
                callees = {ir.FlatSymbolRefAttr(c.attributes["callee"]).value for c in targets}
                if not all([inline(e, call) for call in targets]):
                    continue
                drop_uncalled(e, callees)
                out = e.text()
            yield out
