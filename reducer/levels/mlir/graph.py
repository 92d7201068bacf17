"""The dataflow graph of a module's operations (networkx), and what it answers for the IR passes:
which operations feed a given one (the backward slice of the culprit), and which are dead.

Nodes are positions in the module's pre-order walk (`reducer.levels.mlir.module.walk`). An edge u -> v
means v needs u: u defines a value v uses; u is the terminator of a region of v (it yields v's
results); or u holds the region v sits in (v cannot outlive its parent). Function operations are
not nodes: their arguments are inputs, their `return`s are the roots of liveness, together with
operations that have side effects.
"""
from __future__ import annotations

import networkx as nx

from reducer.levels.mlir import module as mm

#: operations that matter even when nothing uses their results
EFFECT_OPS = {"stablehlo.outfeed", "stablehlo.infeed", "stablehlo.send", "stablehlo.recv",
              "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.collective_permute"}
SINK = "sink"


def operation(x):
    """The generic Operation behind an op view, a value's owner, or an Operation."""
    return getattr(x, "operation", x)


def has_effects(op) -> bool:
    if op.name in EFFECT_OPS or (len(op.results) == 0 and not mm.is_terminator(op)):
        return True
    if op.name == "stablehlo.custom_call" and "has_side_effect" in op.attributes:
        return str(op.attributes["has_side_effect"]) == "true"
    return False


def defining_op(value):
    """The operation that defines `value`, or, for a block argument, the operation that owns the
    block (None for a function argument)."""
    from jaxlib.mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        parent = operation(owner.owner)
        return None if parent.name == "func.func" else parent
    return operation(owner)


class Dataflow:
    """The graph of one parsed module."""

    def __init__(self, module, ops: list | None = None):
        self.ops = ops if ops is not None else mm.walk(module)
        self.index = {op: i for i, op in enumerate(self.ops)}
        g = nx.DiGraph()
        g.add_node(SINK)
        for i, op in enumerate(self.ops):
            if op.name in mm.FRAME_OPS:
                continue
            g.add_node(i)
            parent = op.parent
            in_function_body = parent is not None and parent.name == "func.func"
            if not in_function_body and parent is not None:
                g.add_edge(self.index[parent], i)
                if mm.is_terminator(op):
                    g.add_edge(i, self.index[parent])
            if (in_function_body and mm.is_terminator(op)) or has_effects(op):
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
        return [i for i, op in enumerate(self.ops) if op.name not in mm.FRAME_OPS and i not in alive]

    def dies_with(self, op) -> int:
        """How many operations become dead when `op`'s results are no longer used (itself included)."""
        i = self.index[op]
        g = self.graph.copy()
        g.remove_edges_from([(i, j) for j in list(g.successors(i)) if j == SINK or self.ops[j].parent != op])
        alive = nx.ancestors(g, SINK)
        return sum(1 for n in self.feeding(op) | {i} if n not in alive)


def remove_dead(module) -> int:
    """Erase every dead operation of `module`; returns how many were erased."""
    flow = Dataflow(module)
    dead = flow.dead()
    for i in reversed(dead):  # users and nested operations before what they use or sit in
        flow.ops[i].erase()
    return len(dead)
