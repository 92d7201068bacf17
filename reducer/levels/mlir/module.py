"""The MLIR representation: a module, optionally preceded by its pass pipeline on a `//` line.

That is the format of the files Enzyme-JAX dumps when its pipeline fails (`// PIPELINE`, then the
module), so one text carries both: IR passes edit the module and, when they change the signature
of the function the pipeline differentiates, the activity lists of its `enzyme-wrap` pass.

Modules are parsed and printed with the MLIR Python bindings that ship in jaxlib, in a context made
by JAX's own `make_ir_context()` (it registers every dialect JAX emits) that also takes operations of
dialects it does not know (`enzymexla`, `enzyme`, `transform` …) and keeps them opaque, in generic
form. enzyme-ad exposes no registry of its own, only its pass-pipeline runner: a module the bindings
cannot read but Enzyme-JAX's parser accepts is reduced as text (`form` "text"). All of this runs in
the IR worker (`reducer.levels.mlir.ir_worker`), never in the reducing process: `MlirModule` given a
worker asks it. They are printed without debug locations, in the `form` the reduction works in.

Size is the number of operations other than the module, functions and region terminators
(`return`); the key then counts functions, arguments and results, tensor elements, attributes and
characters, so that every accepted candidate is smaller in one of them. In text form: operation
lines, then lines, then characters.
"""
from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

from reducer.levels.mlir import pipeline as pl
from reducer.levels.mlir.ir_worker import Crashed, RemoteItem
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


def default_pipeline_here(module_text: str) -> str:
    """The pass enzyme_jax_ir runs for reverse mode, for the module's entry function."""
    from reducer.levels.mlir.passes import _ir

    e = _ir.Item(join(None, module_text))
    name = e.entry_name()
    f = e.function(name)
    ft = f.attributes["function_type"].value
    return pl.wrap_pipeline(name, [_ir.activity(t) for t in ft.inputs], [_ir.activity(t) for t in ft.results])


class MlirModule:
    """The engine's representation of an MLIR program (see the module docstring). With a `worker`
    (`reducer.levels.mlir.ir_worker.IrWorker`), every parse happens there, and a crash makes the
    program invalid; without one, here (in the worker itself, and in tests)."""

    unit = "operations"  # what `size` counts, as the progress display says it

    def __init__(self, cache_size: int = 2048, worker=None, form: str = "pretty", keep=()):
        self._cache: OrderedDict[str, tuple | None] = OrderedDict()
        self._cache_size = cache_size
        self.worker = worker
        self.form = form
        self.keep = set(keep)

    def settings(self) -> dict:
        return {"form": self.form, "keep": sorted(self.keep)}

    def _ask(self, **request):
        """The worker's reply, or None when the bindings crashed on the request."""
        try:
            return self.worker.call({**request, **self.settings()})
        except Crashed:
            return None

    def parse(self, program: str):
        """The work item the IR passes read: with a worker, a handle on the program that the
        worker parses and keeps (`ir_worker.RemoteItem`); without one, the program parsed here."""
        if self.worker is not None:
            return RemoteItem(program)
        from reducer.levels.mlir.passes import _ir

        return _ir.Item(program, self.form, self.keep)

    def remember(self, program: str, info_: list | None) -> None:
        digest = hashlib.sha1(program.encode()).hexdigest()
        self._cache[digest] = tuple(info_) if info_ else None
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _info(self, program: str) -> tuple | None:
        digest = hashlib.sha1(program.encode()).hexdigest()
        if digest in self._cache:
            self._cache.move_to_end(digest)
            return self._cache[digest]
        if self.worker is not None:
            reply = self._ask(do="measure", program=program)
            found = reply["info"] if reply else None
        else:
            found = info(program, self.form)
        self.remember(program, found)
        return self._cache[digest]

    def size(self, program: str) -> int:
        info_ = self._info(program)
        return info_[0] if info_ else 1 << 30

    def key(self, program: str) -> tuple:
        info_ = self._info(program)
        return info_ if info_ else (1 << 30,)

    def verify(self, program: str) -> bool:
        """Parses and passes the MLIR verifier (in text form: Enzyme-JAX's parser reads it)."""
        return self._info(program) is not None

    def normalize(self, program: str) -> str:
        """The program as the passes print it: the module without locations."""
        if self.worker is not None:
            reply = self._ask(do="normalize", program=program)
            text = reply["text"] if reply else None
        else:
            text = normalize_here(program, self.form)
        if text is None:
            raise ValueError("the MLIR bindings cannot print it in " + self.form + " form")
        return text

    def ops(self, program: str) -> list[str]:
        """The names of the operations that count, in order (for reports)."""
        if self.worker is not None:
            reply = self._ask(do="ops", program=program)
            return reply["ops"] if reply else []
        return ops_here(program, self.form)

    def default_pipeline(self, module_text: str) -> str | None:
        """The reverse-mode pass enzyme_jax_ir would run on the module, or None without a
        function the bindings can read."""
        if self.worker is None:
            return default_pipeline_here(module_text)

        try:
            return self.worker.call({"do": "default_pipeline", "module": module_text, **self.settings()})["pipeline"]
        except (Crashed, RuntimeError):  # no function the bindings can read: nothing to differentiate
            return None

    def adopt(self, program: str, fails_same, log) -> str:
        """The program in the first form, of pretty, generic and text, that still fails as the
        text given does (`fails_same(program)`): it sets `form`, and says in `log` why a form
        was passed over. The text as given fails by definition, so the last form always does."""
        if self.form == "text":
            log("the MLIR bindings cannot read the module (Enzyme-JAX's parser can): reducing it as text")
            return program
        for form in ("pretty", "generic"):
            self.form = form
            try:
                printed = self.normalize(program)
            except ValueError:
                continue
            if printed == program or fails_same(printed):
                return printed
            log(f"the module as the MLIR bindings print it ({form} form) does not fail the same way")
        self.form = "text"
        log("reducing the module as given, as text")
        return program

    def name_failing_pass(self, sig, program: str):
        """`sig` with a title that names the pass that fails, when it is a pass failure of the
        program's pipeline (found by `failure_names.FailingPass`, running prefixes of the pipeline in the
        IR worker); its fields stay as they are."""
        from reducer.levels.mlir import failure_names

        if self.worker is None:
            return sig

        def diagnostic(module_text: str, prefix: str) -> str | None:
            try:
                return self.worker.call({"do": "diagnose", "module": module_text, "pipeline": prefix})["diagnostic"]
            except (Crashed, RuntimeError):
                return None

        fault = failure_names.FailingPass(diagnostic).locate(program, None, sig)
        return failure_names.named(sig, fault.name if fault is not None else None)

    def problem(self, module_text: str) -> str | None:
        """Why the module is not one the tool can reduce, in one line; None when it is. The
        parsers read it in the worker, so that a crash there is a clean answer too. A module the
        bindings refuse but Enzyme-JAX's parser reads is fine: it is reduced as text."""
        def ask(parser: str) -> tuple[bool, str | None]:  # (crashed, why it is refused)
            if self.worker is None:
                return False, parse_error(module_text) if parser == "jaxlib" else enzyme_parse_error(module_text)
            reply = self._ask(do="check", module=module_text, parser=parser)
            return (True, None) if reply is None else (False, reply["error"])

        crashed, jax_error = ask("jaxlib")
        if not crashed and not jax_error:
            return None
        if not has_enzyme():
            return "the MLIR parser crashed reading it" if crashed else jax_error
        enzyme_crashed, enzyme_error = ask("enzyme")
        if enzyme_crashed or enzyme_error:
            if crashed:
                return ("the MLIR parser crashed reading it"
                        + (f" (Enzyme-JAX's: {enzyme_error})" if enzyme_error else ""))
            return enzyme_error or jax_error
        self.form = "text"  # Enzyme-JAX reads what the bindings cannot
        return None
