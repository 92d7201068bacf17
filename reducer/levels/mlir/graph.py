"""The dataflow graph of a module's operations (networkx), and what it answers for the IR passes:
which operations feed a given one (the backward slice of the culprit), and which are dead.

Nodes are positions in the module's pre-order walk (`reducer.levels.mlir.module.walk`). An edge u -> v
means v needs u: u defines a value v uses; u is the terminator of a region of v (it yields v's
results); or u holds the region v sits in (v cannot outlive its parent). Function operations are
not nodes: their arguments are inputs, their `return`s are the roots of liveness, together with
operations that MLIR would not erase unused. That is MLIR's own answer, not a list kept here:
`trivial-dce` asks each operation's memory-effect interface (an operation of a dialect the
bindings do not know has unknown effects, so it stays), and dead-code removal is that pass, with the
operations the failure names anchored so that it never erases them.
"""
from __future__ import annotations

import networkx as nx

from reducer.levels.mlir import module as mm

SINK = "sink"
ANCHOR = "reducer.keep"
TAG = "reducer.position"
_managers: dict = {}


def operation(x):
    """The generic Operation behind an op view, a value's owner, or an Operation."""
    return getattr(x, "operation", x)


def trivial_dce(module) -> None:
    """MLIR's `trivial-dce` on the module: erases every operation whose results are unused and
    whose effect interfaces say it can go."""
    from jaxlib.mlir import passmanager

    pm = _managers.get(module.context)
    if pm is None:
        pm = passmanager.PassManager.parse("builtin.module(trivial-dce)", module.context)
        pm.enable_verifier(False)
        _managers.clear()  # one per context: the contexts are renewed now and then
        _managers[module.context] = pm
    pm.run(module.operation)


def effectful(module, ops: list) -> set[int]:
    """Positions (in `ops`) of the operations MLIR keeps even when no function returns anything:
    in a copy whose function `return`s lost their operands, what survives `trivial-dce` with no
    survivor using it."""
    from jaxlib.mlir import ir

    with module.context, ir.Location.unknown(module.context):
        for i, op in enumerate(ops):
            op.attributes[TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
        copy = module.operation.clone()
        for op in ops:
            del op.attributes[TAG]
        for op in mm.walk_within(copy):
            if mm.is_terminator(op) and top_level(op.parent) and len(op.operands):
                ir.Operation.create(op.name, operands=[], ip=ir.InsertionPoint(op))
                op.erase()
        trivial_dce(copy)
        found = {ir.IntegerAttr(op.attributes[TAG]).value for op in mm.walk_within(copy)
                 if TAG in op.attributes and not any(True for r in op.results for _ in r.uses)}
        copy.erase()
    return found


def top_level(op) -> bool:
    """Whether `op` sits directly in the module (a function, a global): not a node of the graph."""
    return op is not None and op.parent is not None and op.parent.name == "builtin.module"


def defining_op(value):
    """The operation that defines `value`, or, for a block argument, the operation that owns the
    block (None for a function argument)."""
    from jaxlib.mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        parent = operation(owner.owner)
        return None if top_level(parent) else parent
    return operation(owner)


class Dataflow:
    """The graph of one parsed module."""

    def __init__(self, module, ops: list | None = None):
        self.ops = ops if ops is not None else mm.walk(module)
        self.index = {op: i for i, op in enumerate(self.ops)}
        roots = effectful(module, self.ops)
        g = nx.DiGraph()
        g.add_node(SINK)
        for i, op in enumerate(self.ops):
            if op.name in mm.FRAME_OPS or top_level(op):
                continue
            g.add_node(i)
            parent = op.parent
            in_function_body = top_level(parent)
            if not in_function_body and parent is not None:
                g.add_edge(self.index[parent], i)
                if mm.is_terminator(op):
                    g.add_edge(i, self.index[parent])
            if (in_function_body and mm.is_terminator(op)) or (i in roots and not mm.is_terminator(op)):
                g.add_edge(i, SINK)
            for v in op.operands:
                d = defining_op(v)
                if d is not None and d in self.index:
                    g.add_edge(self.index[d], i)
        self.graph = g

    def feeding(self, op) -> set[int]:
        """Positions of every operation `op` needs (its backward slice), itself left out."""
        return {n for n in nx.ancestors(self.graph, self.index[op]) if n != SINK}

    def fed_by(self, op) -> set[int]:
        """Positions of every operation that needs `op` (its forward slice)."""
        return {n for n in nx.descendants(self.graph, self.index[op]) if n != SINK}

    def live(self) -> set[int]:
        return {n for n in nx.ancestors(self.graph, SINK) if n != SINK}

    def dead(self) -> list[int]:
        """Positions of operations nothing live needs, in walk order."""
        alive = self.live()
        return [i for i, op in enumerate(self.ops) if i in self.graph and i not in alive]

    def dies_with(self, op) -> int:
        """How many operations become dead when `op`'s results are no longer used (itself included)."""
        i = self.index[op]
        g = self.graph.copy()
        g.remove_edges_from([(i, j) for j in list(g.successors(i)) if j == SINK or self.ops[j].parent != op])
        alive = nx.ancestors(g, SINK)
        return sum(1 for n in self.feeding(op) | {i} if n not in alive)


def remove_dead(module, keep=frozenset()) -> int:
    """Erase every dead operation of `module` (MLIR's `trivial-dce`), except the operations named
    in `keep` (what the failure names) and what feeds them; returns how many were erased."""
    from jaxlib.mlir import ir

    before = len(mm.walk(module))
    anchors = []
    with module.context, ir.Location.unknown(module.context):
        for op in mm.walk(module):
            if op.name in keep and len(op.results):
                anchors.append(ir.Operation.create(ANCHOR, operands=list(op.results), ip=_after(op)))
        trivial_dce(module)
        for a in anchors:
            a.erase()
    return before - len(mm.walk(module))


def _after(op):
    """An insertion point after `op` in its block."""
    from jaxlib.mlir import ir

    block = op.block
    ops = list(block.operations)
    at = next(k for k, o in enumerate(ops) if operation(o) == op)
    return ir.InsertionPoint(ops[at + 1]) if at + 1 < len(ops) else ir.InsertionPoint(block)
