"""Drop attributes: one attribute name everywhere it occurs (most frequent first), then each
attribute of each operation. An operation's inherent attributes (its properties, `<{…}>` in
generic form: `alignment` and `ordering` of `llvm.load`, `nonNeg` of `arith.extui` …) are left
alone: without them the operation is not valid, and MLIR may crash printing or even verifying it.
Debug locations need no pass: every program is printed without them. A change point is (None,
name) for a name everywhere, (operation position, name) for one operation's."""
from __future__ import annotations

from collections import Counter

from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass

#: attributes an operation cannot lose and stay the same kind of program
KEEP = {"sym_name", "function_type", "callee"}
#: inherent attributes that every function operation may lose (its argument and result attributes)
OPTIONAL = {"arg_attrs", "res_attrs", "sym_visibility"}


def names(op) -> list[str]:
    inherent = inherent_names(op) - OPTIONAL
    return [n for n in op.attributes if n not in KEEP and n not in inherent]


def inherent_names(op) -> set[str]:
    """The names in the operation's properties, read from its generic form."""
    head = op.get_asm(print_generic_op_form=True, enable_debug_info=False).split("\n", 1)[0]
    start = head.find("<{")
    if start < 0:
        return set()
    found, depth, item = set(), 0, ""
    for ch in head[start + 1:]:
        depth += ch in "{[("
        depth -= ch in "}])"
        if depth == 0 or (depth == 1 and ch == ","):
            found.add(item.strip(" {,").split("=")[0].strip())
            item = ""
            if depth == 0:
                break
        else:
            item += ch
    return {n for n in found if n}


class DropAttributes(ReductionPass):
    name = "drop-attributes"

    def points(self, item: ir_tools.Item) -> list[tuple]:
        per_op = [(i, name) for i, op in enumerate(item.ops) for name in names(op)]
        everywhere = Counter(name for _, name in per_op)
        return [(None, name) for name, count in everywhere.most_common() if count > 1] + per_op

    def apply(self, item: ir_tools.Item, point) -> str | None:
        where, name = point
        with item.edit() as e:
            for op in e.ops if where is None else [e.ops[where]]:
                if name in op.attributes:
                    del op.attributes[name]
            return e.text(dce=False)
