"""Tools the IR passes share: the parsed work item they read (`Item`), a fresh copy of it to change
(`Edit`), and the edits most passes need, written with the MLIR Python bindings: functions and
their signatures (kept in step with the pipeline's activity lists), new arguments, splat
constants, values in scope, calls, a region's body put in place of its operation, and dead-code
removal through the dataflow graph.
"""
from __future__ import annotations

from reducer.levels.mlir import graph as mlir_graph, module as mm
from reducer.levels.mlir import pipeline as pl
from reducer.levels.mlir.graph import operation


class Item:
    """A program parsed once and never changed: the work item passes read to find their change
    points (`ops` in pre-order, `flow` its dataflow graph); `edit()` gives a copy to change. In
    text form only its text is read: the bindings cannot hold the module. `form` is how the
    reduction prints modules (`reducer.levels.mlir.module`), `keep` the operations dead-code
    removal never erases (what the failure names)."""

    def __init__(self, program: str, form: str = "pretty", keep=frozenset()):
        self.program, self.form, self.keep = program, form, frozenset(keep)
        self.pipeline, self.module_text = mm.split(program)
        parse = form != "text"
        self.module = mm.parse_module(self.module_text) if parse else None
        self.ok = self.module is not None or not parse  # a text item is always readable
        self.ops = mm.walk(self.module) if self.module is not None else []
        self.context = self.module.context if self.module is not None else None
        self._flow = None

    @property
    def flow(self) -> mlir_graph.Dataflow:
        if self._flow is None:
            self._flow = mlir_graph.Dataflow(self.module, self.ops)
        return self._flow

    def edit(self) -> "Edit":
        return Edit(self.program, self.form, self.keep)

    # -- functions ------------------------------------------------------------------------------
    def functions(self, declarations: bool = False) -> list:
        """The module's functions with a body (and, when asked, the bodiless declarations too)."""
        return [op for op in self.module.body.operations if op.operation.name == "func.func"
                and (declarations or len(op.operation.regions[0].blocks) > 0)]

    def function(self, name: str):
        for f in self.functions(declarations=True):
            if func_name(f) == name:
                return operation(f)
        return None

    def entry_name(self) -> str:
        named = pl.entry_function(self.pipeline)
        if named:
            return named
        names = [func_name(f) for f in self.functions(declarations=True)]
        if "main" in names:
            return "main"
        public = [func_name(f) for f in self.functions() if visibility(f) == "public"]
        return public[0] if public else (names[0] if names else "main")

    def can_change_signature(self, f) -> bool:
        """Whether `f`'s arguments and results may change: nothing calls it."""
        return not callers(self.module, func_name(f))


class Edit(Item):
    """A program parsed afresh, its own copy to change (a context manager: the bindings build new
    operations in its context); `text()` prints it, without dead code."""

    def __enter__(self):
        from jaxlib.mlir import ir

        if not self.ok:
            return self
        self._ctx = self.context.__enter__()
        self._loc = ir.Location.unknown(self.context)
        self._loc.__enter__()
        return self

    def __exit__(self, *exc):
        if not self.ok:
            return
        self._loc.__exit__(*exc)
        self.context.__exit__(*exc)

    def signature_changed(self, f, arg_map: list | None, res_map: list | None) -> None:
        """Rewrite `f`'s type from its block and return, its argument and result attributes, and the
        pipeline's activities, after arguments or results were added, removed or reordered.
        `arg_map[i]` / `res_map[i]`: the old position of new argument / result i, None if new."""
        from jaxlib.mlir import ir

        f = operation(f)
        block = f.regions[0].blocks[0]
        ret = block.operations[len(block.operations) - 1]
        arg_types = [a.type for a in block.arguments]
        res_types = [v.type for v in ret.operands]
        f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, res_types))
        for key, mapping in (("arg_attrs", arg_map), ("res_attrs", res_map)):
            if mapping is None or key not in f.attributes:
                continue
            old = ir.ArrayAttr(f.attributes[key])
            empty = ir.DictAttr.get({})
            new = [old[i] if i is not None and i < len(old) else empty for i in mapping]
            if new:
                f.attributes[key] = ir.ArrayAttr.get(new)
            else:
                del f.attributes[key]
        if self.pipeline and func_name(f) == pl.entry_function(self.pipeline):
            self.pipeline = pl.remap_activities(
                self.pipeline, func_name(f), arg_map, [activity(t) for t in arg_types],
                res_map, [activity(t) for t in res_types])

    def add_argument(self, f, type_):
        """A new last argument of `f` (whose signature may change), of type `type_`."""
        from jaxlib.mlir import ir

        f = operation(f)
        block = f.regions[0].blocks[0]
        n = len(block.arguments)
        arg = block.add_argument(type_, ir.Location.unknown(self.context))
        self.signature_changed(f, list(range(n)) + [None], None)
        return arg

    def set_results(self, f, values: list, res_map: list) -> None:
        """Make `f` return `values`; `res_map[i]` is the old position of result i (None if new)."""
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import func as func_d

        f = operation(f)
        block = f.regions[0].blocks[0]
        old = block.operations[len(block.operations) - 1]
        func_d.ReturnOp(list(values), ip=ir.InsertionPoint(old))
        old.operation.erase()
        self.signature_changed(f, None, res_map)

    def text(self, dce: bool = True) -> str | None:
        """The edited program without dead code; None when the verifier rejects it (never run, and
        never printed: the printer may crash on an operation that lost a required attribute)."""
        if not mm.verifies(self.module):
            return None
        if dce:
            mlir_graph.remove_dead(self.module, self.keep)
        program = mm.join(self.pipeline, mm.print_module(self.module, self.form == "generic"))
        mm.remember_measure(program, list(mm.measure(self.module, mm.split(program)[1])))
        return program


def func_name(f) -> str:
    from jaxlib.mlir import ir

    return ir.StringAttr(operation(f).attributes["sym_name"]).value


def visibility(f) -> str:
    from jaxlib.mlir import ir

    attrs = operation(f).attributes
    return ir.StringAttr(attrs["sym_visibility"]).value if "sym_visibility" in attrs else "public"


def function_of(op):
    """The func.func an operation sits in."""
    op = operation(op)
    while op is not None and op.name != "func.func":
        op = op.parent
    return op


def activity(t) -> str:
    """The activity a new argument or result of this type gets: active for floating point."""
    from jaxlib.mlir import ir

    elt = t.element_type if isinstance(t, ir.ShapedType) else t
    return pl.ACTIVE if isinstance(elt, (ir.FloatType, ir.ComplexType)) else pl.CONST


def symbol_refs(attr, found: set) -> None:
    from jaxlib.mlir import ir

    if isinstance(attr, ir.FlatSymbolRefAttr):
        found.add(attr.value)
    elif isinstance(attr, ir.SymbolRefAttr):
        found.add(str(attr).lstrip("@").split("::")[0].strip('"'))
    elif isinstance(attr, ir.ArrayAttr):
        for a in attr:
            symbol_refs(a, found)
    elif isinstance(attr, ir.DictAttr):
        for i in range(len(attr)):
            symbol_refs(attribute(attr, attr[i].name), found)


def attribute(holder, name: str):
    """The attribute `name` of an operation or dictionary, or None when the bindings cannot
    represent it (a dense constant of complex numbers: reading it as a NamedAttribute aborts)."""
    try:
        return (holder.attributes if hasattr(holder, "attributes") else holder)[name]
    except (TypeError, ValueError, KeyError):
        return None


def used_symbols(module) -> set[str]:
    """Names of every symbol an operation refers to (callees, called computations …)."""
    found: set[str] = set()
    for op in mm.walk(module):
        if op.name == "func.func":
            continue
        for name in op.attributes:
            symbol_refs(attribute(op, name), found)
    return found


def callers(module, name: str) -> list:
    from jaxlib.mlir import ir

    return [op for op in mm.walk(module) if op.name == "func.call"
            and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == name]


def values_in_scope(op) -> list:
    """Values `op` may use: arguments of the blocks around it and results of the operations
    before it in those blocks, nearest first."""
    op = operation(op)
    found = []
    current = op
    while current is not None and current.name != "builtin.module":
        block = current.block
        before = []
        for other in block.operations:
            other = operation(other)
            if other == current:
                break
            before.extend(other.results)
        found.extend(reversed(before))
        found.extend(block.arguments)
        if current.parent is None or current.parent.name == "func.func":
            break
        current = current.parent
    return found


def splat_constant(type_, value: float, before):
    """A `stablehlo.constant` of `type_` filled with `value`, inserted before `before`; None when
    the type has no splat (dynamic shapes, tokens, complex numbers)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    if not isinstance(type_, ir.RankedTensorType) or not type_.has_static_shape:
        return None
    elt = type_.element_type
    if isinstance(elt, ir.FloatType):
        attr = ir.FloatAttr.get(elt, float(value))
    elif isinstance(elt, ir.IntegerType):
        attr = ir.IntegerAttr.get(elt, int(value))
    else:
        return None
    dense = ir.DenseElementsAttr.get_splat(type_, attr)
    return stablehlo.ConstantOp(dense, ip=ir.InsertionPoint(operation(before))).result


def replace_call(call, operands: list, result_types: list):
    """A new func.call like `call` with other operands and result types, in its place (the old
    call is left for the caller to erase)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func as func_d

    call = operation(call)
    new = func_d.CallOp(list(result_types), ir.FlatSymbolRefAttr(call.attributes["callee"]), list(operands),
                        ip=ir.InsertionPoint(call))
    return operation(new)


def splice(block, op) -> None:
    """Put the body of `block` in place of `op`: its arguments become `op`'s operands, its
    operations move before `op`, what its terminator yields replaces `op`'s results, `op` goes."""
    op = operation(op)
    for arg, value in zip(block.arguments, op.operands):
        arg.replace_all_uses_with(value)
    ops = [operation(o) for o in block.operations]
    for o in ops[:-1]:
        o.move_before(op)
    for result, value in zip(op.results, ops[-1].operands):
        result.replace_all_uses_with(value)
    op.erase()


def default_pipeline(module_text: str) -> str:
    """The pass enzyme_jax_ir runs for reverse mode, for the module's entry function."""
    e = Item(mm.join(None, module_text))
    name = e.entry_name()
    f = e.function(name)
    ft = f.attributes["function_type"].value
    return pl.wrap_pipeline(name, [activity(t) for t in ft.inputs], [activity(t) for t in ft.results])
