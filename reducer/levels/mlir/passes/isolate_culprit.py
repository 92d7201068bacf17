"""Keep only the failing operation: the operation the failure names (say `chlo.top_k`, or the
`stablehlo.custom_call` to `lapack_spotrf_ffi`) alone in the entry function, its operands turned
into arguments and its results returned; failing that, the operation with everything that feeds it
(its backward slice in the dataflow graph) and nothing after it. The biggest cut there is; it needs
the culprit's name, which comes from the failure signature. A change point is (how, operation
position)."""
from __future__ import annotations

from reducer.levels.mlir import graph as mlir_graph, module as mm
from reducer.levels.mlir.graph import operation
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def call_target(op) -> str:
    from jaxlib.mlir import ir

    if "call_target_name" in op.attributes:
        return ir.StringAttr(op.attributes["call_target_name"]).value
    return ""


def make_entry(e: ir_tools.Edit, f, entry: str, fresh_arguments: bool) -> None:
    """Make `f` the entry function: drop the old entry (and nothing else), take its name, public."""
    from jaxlib.mlir import ir

    f = operation(f)
    old = e.function(entry)
    if old is not None and old != f:
        old.erase()
    f.attributes["sym_name"] = ir.StringAttr.get(entry)
    if "sym_visibility" in f.attributes:
        del f.attributes["sym_visibility"]
    if fresh_arguments:
        n = len(f.regions[0].blocks[0].arguments)
        e.signature_changed(f, [None] * n, None)


def inside(x, op) -> bool:
    """Whether operation `x` lies within `op`."""
    while x is not None:
        if x == op:
            return True
        x = x.parent
    return False


def captured(op) -> list[tuple]:
    """(operation, operand position, value) for every use, inside `op`'s regions, of a value
    defined outside `op`."""
    from jaxlib.mlir import ir

    found = []
    for nested in mm.walk_within(op):
        for k, v in enumerate(nested.operands):
            owner = v.owner
            where = operation(owner.owner) if isinstance(owner, ir.Block) else operation(owner)
            if not inside(where, op):
                found.append((nested, k, v))
    return found


def alone(e: ir_tools.Edit, op) -> None:
    """A new entry function holding only a copy of `op`: its operands, and the outside values its
    regions use, become arguments."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func as func_d

    op = operation(op)
    entry = e.entry_name()
    outside = []
    for _, _, v in captured(op):
        if not any(v == w for w in outside):
            outside.append(v)
    inputs = [v.type for v in op.operands] + [v.type for v in outside]
    new = func_d.FuncOp("reducer_isolated", (inputs, [r.type for r in op.results]),
                        ip=ir.InsertionPoint(e.module.body))
    block = new.add_entry_block()
    copy = op.clone(ip=ir.InsertionPoint(block))
    for k in range(len(copy.operands)):
        copy.operands[k] = block.arguments[k]
    n = len(copy.operands)
    for nested, k, v in captured(copy):
        nested.operands[k] = block.arguments[n + next(i for i, w in enumerate(outside) if w == v)]
    func_d.ReturnOp(list(copy.results), ip=ir.InsertionPoint(block))
    for f in e.functions(declarations=True):
        if operation(f) != operation(new):
            operation(f).erase()
    make_entry(e, new, entry, fresh_arguments=False)
    e.signature_changed(new, [None] * len(block.arguments), [None] * len(copy.results))


def with_slice(e: ir_tools.Edit, op) -> bool:
    """The function around `op` returns `op`'s results and becomes the entry; the rest dies."""
    op = operation(op)
    f = ir_tools.function_of(op)
    if op.parent != f:
        return False
    entry = e.entry_name()
    make_entry(e, f, entry, fresh_arguments=ir_tools.func_name(f) != entry)
    e.set_results(f, list(op.results), [None] * len(op.results))
    return True


#: the two cuts, the bigger first
HOW = {"alone": alone, "with-slice": with_slice}


class IsolateCulprit(ReductionPass):
    name = "isolate-culprit"

    def __init__(self, culprit: tuple[str, str] | None = None):
        self.culprit = culprit

    def matches(self, op) -> bool:
        if not self.culprit:
            return False
        name, target = self.culprit
        return op.name == name and (not target or call_target(op) == target)

    def points(self, item: ir_tools.Item) -> list[tuple[str, int]]:
        found = [i for i, op in enumerate(item.ops) if self.matches(op)]
        return [(how, i) for how in HOW for i in found]

    def apply(self, item: ir_tools.Item, point) -> str | None:
        how, i = point
        with item.edit() as e:
            if HOW[how](e, e.ops[i]) is False:
                return None
            mlir_graph.remove_dead(e.module, e.keep)
            for f in e.functions(declarations=True):  # functions the slice no longer calls
                name = ir_tools.func_name(f)
                if name != e.entry_name() and name not in ir_tools.used_symbols(e.module):
                    operation(f).erase()
            return e.text()
