"""The MLIR representation: a module, optionally preceded by its pass pipeline on a `//` line.

That is the format of the files Enzyme-JAX dumps when its pipeline fails (`// PIPELINE`, then the
module), so one text carries both: IR passes edit the module and, when they change the signature
of the function the pipeline differentiates, the activity lists of its `enzyme-wrap` pass.

Modules are parsed and printed with the MLIR Python bindings that ship in jaxlib, in a context made
by JAX's own `make_ir_context()` (it registers every dialect JAX emits). They are printed without
debug locations. Size is the number of operations other than the module, functions and region
terminators (`return`); the key then counts functions, arguments and results, tensor elements,
attributes and characters, so that every accepted candidate is smaller in one of them.
"""
from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

from reducer.levels.mlir import pipeline as pl

HEADER = "// "
#: operations that frame a program rather than compute: not counted in its size
FRAME_OPS = {"builtin.module", "func.func"}
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
    """(pipeline or None, module text) of a program."""
    if text.startswith(HEADER.rstrip()):
        first, _, rest = text.partition("\n")
        candidate = first[2:].strip()
        if pl.looks_like_pipeline(candidate):
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
    if not module.operation.verify():
        return "the module does not verify"
    return None


def print_module(module) -> str:
    """The module's text without debug locations."""
    return module.operation.get_asm(enable_debug_info=False)


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


class MlirModule:
    """The engine's representation of an MLIR program (see the module docstring)."""

    def __init__(self, cache_size: int = 2048):
        self._cache: OrderedDict[str, tuple | None] = OrderedDict()
        self._cache_size = cache_size

    def _info(self, program: str) -> tuple | None:
        digest = hashlib.sha1(program.encode()).hexdigest()
        if digest in self._cache:
            self._cache.move_to_end(digest)
            return self._cache[digest]
        _, module_text = split(program)
        module = parse_module(module_text)
        info = None
        if module is not None and module.operation.verify():
            info = measure(module, module_text)
        self._cache[digest] = info
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return info

    def size(self, program: str) -> int:
        info = self._info(program)
        return info[0] if info else 1 << 30

    def key(self, program: str) -> tuple:
        info = self._info(program)
        return info if info else (1 << 30,)

    def verify(self, program: str) -> bool:
        """Parses and passes the MLIR verifier."""
        return self._info(program) is not None

    def normalize(self, program: str) -> str:
        """The program as the passes print it: the module without locations."""
        pipeline, module_text = split(program)
        module = parse_module(module_text)
        if module is None:
            raise ValueError(parse_error(module_text) or "not an MLIR module")
        return join(pipeline, print_module(module))

    def ops(self, program: str) -> list[str]:
        """The names of the operations that count, in order (for reports)."""
        module = parse_module(split(program)[1])
        return [op.name for op in walk(module) if counted(op)] if module is not None else []
