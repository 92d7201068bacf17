"""Shrink tensor types: one dimension size, say 20, becomes 1, 2 or 10 in every tensor type of the
module (results, arguments, function types), and dense constants of those types keep their first
elements. Largest sizes first, smallest replacement first; candidates the verifier rejects (a
slice bound that no longer fits, say) never run. A change point is (size, new size)."""
from __future__ import annotations

from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def dimensions(ops) -> list[int]:
    from jaxlib.mlir import ir

    sizes = set()
    for op in ops:
        types = [r.type for r in op.results] + [a.type for reg in op.regions for b in reg.blocks for a in b.arguments]
        for t in types:
            if isinstance(t, ir.RankedTensorType) and t.has_static_shape:
                sizes.update(t.shape)
    return sorted((d for d in sizes if d > 1), reverse=True)


def targets(n: int) -> list[int]:
    return sorted({m for m in (1, 2, n // 2) if 1 <= m < n})


def shrink_type(t, n: int, m: int):
    from jaxlib.mlir import ir

    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape or n not in t.shape:
        return None
    return ir.RankedTensorType.get([m if d == n else d for d in t.shape], t.element_type, t.encoding)


def shrink_constant(attr, new_type, n: int, m: int):
    import numpy as np
    from jaxlib.mlir import ir

    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        return ir.DenseElementsAttr.get_splat(new_type, dense.get_splat_value())
    array = np.array(dense)
    cut = tuple(slice(0, m) if d == n else slice(None) for d in array.shape)
    return ir.DenseElementsAttr.get(np.ascontiguousarray(array[cut]), type=new_type.element_type,
                                    shape=list(new_type.shape))


def apply(e: ir_tools.Edit, n: int, m: int) -> bool:
    from jaxlib.mlir import ir

    for op in e.ops:
        for r in op.results:
            t = shrink_type(r.type, n, m)
            if t is not None:
                if op.name == "stablehlo.constant" and "value" in op.attributes:
                    try:
                        op.attributes["value"] = shrink_constant(op.attributes["value"], t, n, m)
                    except Exception:
                        return False
                r.set_type(t)
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    t = shrink_type(a.type, n, m)
                    if t is not None:
                        a.set_type(t)
        if op.name == "func.func":
            ft = op.attributes["function_type"].value
            ins = [shrink_type(t, n, m) or t for t in ft.inputs]
            outs = [shrink_type(t, n, m) or t for t in ft.results]
            op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ins, outs))
    return True


class ShrinkTensors(ReductionPass):
    name = "shrink-tensors"

    def points(self, item: ir_tools.Item) -> list[tuple[int, int]]:
        return [(n, m) for n in dimensions(item.ops) for m in targets(n)]

    def apply(self, item: ir_tools.Item, point) -> str | None:
        n, m = point
        with item.edit() as e:
            return e.text(dce=False) if apply(e, n, m) else None
