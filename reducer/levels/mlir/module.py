"""The MLIR representation: a module, optionally preceded by its pass pipeline on a `//` line, and
what this process does with one through the MLIR Python bindings.

That is the format of the files Enzyme-JAX dumps when its pipeline fails (`// PIPELINE`, then the
module), so one text carries both: IR passes edit the module and, when they change the signature
of the function the pipeline differentiates, the activity lists of its `enzyme-wrap` pass.

Modules are parsed and printed with the MLIR Python bindings that ship in jaxlib, in a context made
by JAX's own `make_ir_context()` (it registers every dialect JAX emits) that also takes operations of
dialects it does not know (`enzymexla`, `enzyme`, `transform` …) and keeps them opaque, in generic
form. enzyme-ad exposes no registry of its own, only its pass-pipeline runner: a module the bindings
cannot read but Enzyme-JAX's parser accepts is reduced as text (`form` "text"). All of this runs in
the IR worker (`reducer.levels.mlir.ir_server`), never in the reducing process, whose
`reducer.levels.mlir.representation.MlirModule` asks the worker. They are printed without debug
locations, in the `form` the reduction works in.

Size is the number of operations other than the module, functions and region terminators
(`return`); the key then counts functions, arguments and results, tensor elements, attributes and
characters, so that every accepted candidate is smaller in one of them. In text form: operation
lines, then lines, then characters.
"""
from __future__ import annotations

import re
import threading

from reducer.levels.mlir import pipeline as pl
from reducer.levels.mlir.text import enzyme_parse_error, has_enzyme, text_ops

HEADER = "// "
#: operations that frame a program rather than compute: not counted in its size
FRAME_OPS = {"builtin.module", "func.func", "llvm.func"}
_local = threading.local()
PARSES_PER_CONTEXT = 400




def context():
    """A context of this thread with every dialect JAX emits, renewed now and then (MLIR contexts
    keep every type and attribute they ever saw)."""
    from jax._src.interpreters import mlir as jax_mlir

    ctx = getattr(_local, "ctx", None)
    uses = getattr(_local, "uses", 0)
    if ctx is None or uses >= PARSES_PER_CONTEXT:
        ctx = jax_mlir.make_ir_context()
        ctx.allow_unregistered_dialects = True
        _local.ctx, uses = ctx, 0
    _local.uses = uses + 1
    return ctx


def split(text: str) -> tuple[str | None, str]:
    """(pipeline or None, module text) of a program: the first line is its pipeline when it is a
    `//` comment that parses as a pipeline of registered passes."""
    if text.startswith(HEADER.rstrip()):
        first, _, rest = text.partition("\n")
        candidate = first[2:].strip()
        if pl.looks_like_pipeline(candidate) and not pl.unregistered_passes(candidate):
            return candidate, rest
    return None, text


def join(pipeline: str | None, module_text: str) -> str:
    module_text = module_text if module_text.endswith("\n") else module_text + "\n"
    return f"{HEADER}{pipeline}\n{module_text}" if pipeline else module_text


def parse_module(module_text: str):
    """The parsed module, or None when the text is not a valid module."""
    from jaxlib.mlir import ir

    try:
        return ir.Module.parse(module_text, context())
    except Exception:
        return None


def parse_error(module_text: str) -> str | None:
    """Why `module_text` is not a valid module (the parser's or verifier's first diagnostic)."""
    from jaxlib.mlir import ir

    try:
        module = ir.Module.parse(module_text, context())
    except Exception as exc:  # MLIRError carries the diagnostics
        diags = getattr(exc, "error_diagnostics", None)
        if diags:
            d = diags[0]
            where = re.match(r'loc\("[^"]*":(\d+):(\d+)\)', str(d.location))
            at = f"line {where.group(1)}, column {where.group(2)}" if where else str(d.location)
            return f"{at}: {d.message}".replace("\n", " ")[:300]
        return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    if not verifies(module):
        return "the module does not verify"
    return None


def print_module(module, generic: bool = False) -> str:
    """The module's text without debug locations, in generic form when asked."""
    return module.operation.get_asm(enable_debug_info=False, print_generic_op_form=generic)


def verifies(module) -> bool:
    """Whether the verifier accepts the module (it may crash on what it rejects: call it only in
    the IR worker)."""
    try:
        return bool(module.operation.verify())
    except Exception:
        return False


def walk(module) -> list:
    """Every operation of the module in pre-order, the module itself left out."""
    return walk_within(module)


def walk_within(op) -> list:
    """The operations nested in `op`'s regions, in pre-order, `op` itself left out."""
    from jaxlib.mlir import ir

    ops = []

    def visit(o):
        ops.append(o)
        return ir.WalkResult.ADVANCE

    op.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops[1:]


def is_terminator(op) -> bool:
    from jaxlib.mlir import ir

    return op.has_trait(ir.IsTerminatorTrait)


def counted(op) -> bool:
    """Whether an operation counts towards a module's size."""
    return op.name not in FRAME_OPS and not is_terminator(op)


def type_elements(t) -> int:
    from jaxlib.mlir import ir

    if isinstance(t, ir.RankedTensorType) and t.has_static_shape:
        n = 1
        for d in t.shape:
            n *= d
        return n
    return 1


def measure(module, text: str) -> tuple:
    """The key of a parsed module: (ops, functions, arguments + results, tensor elements,
    attributes, characters)."""
    ops = walk(module)
    size = functions = signature = elements = attributes = 0
    for op in ops:
        if op.name == "func.func":
            functions += 1
            for region in op.regions:
                for block in region.blocks:
                    signature += len(block.arguments)
        elif counted(op):
            size += 1
        if is_terminator(op) and op.parent is not None and op.parent.name == "func.func":
            signature += len(op.operands)
        attributes += len(op.attributes)
        for r in op.results:
            elements += type_elements(r.type)
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    elements += type_elements(a.type)
    return (size, functions, signature, elements, attributes, len(text))


def remember_measure(program: str, key: list) -> None:
    """What a pass measured of the program it just printed, for `info` to reuse (this thread's)."""
    _local.measured = (program, key)


def info(program: str, form: str, verified: bool = False, module=None) -> list | None:
    """The key of a program in `form` (see `measure`), or None when it is no valid module (in
    text form: when Enzyme-JAX's parser, or without enzyme-ad the bindings, refuse it).
    `verified`: a pass printed it after the verifier accepted it; `module`: it parsed already."""
    measured = getattr(_local, "measured", None)
    if verified and measured and measured[0] == program:
        return measured[1]
    _, module_text = split(program)
    if form == "text":  # valid when either parser reads it
        if (not has_enzyme() or enzyme_parse_error(module_text)) and parse_error(module_text):
            return None
        return [len(text_ops(module_text)), module_text.count("\n"), len(module_text)]
    module = parse_module(module_text) if module is None else module
    if module is None or not (verified or verifies(module)):
        return None
    return list(measure(module, module_text))


def normalize_here(program: str, form: str) -> str | None:
    """The program as the passes print it in `form` (in text form: as given)."""
    if form == "text":
        return program
    pipeline, module_text = split(program)
    module = parse_module(module_text)
    if module is None or not verifies(module):
        return None
    return join(pipeline, print_module(module, form == "generic"))


def ops_here(program: str, form: str) -> list[str]:
    _, module_text = split(program)
    if form == "text":
        return text_ops(module_text)
    module = parse_module(module_text)
    return [op.name for op in walk(module) if counted(op)] if module is not None else []
