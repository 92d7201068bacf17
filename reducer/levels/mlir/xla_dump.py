"""What XLA hands a user, as input to the IR level: HLO text and `--xla_dump_to` folders.

A program run with `XLA_FLAGS=--xla_dump_to=DIR` leaves, per module XLA compiles (numbered in the
order it compiled them), `module_NNNN.NAME.before_optimizations.txt` (the HLO JAX gave XLA, with
FileNames / FileLocations / StackFrames tables naming the user's source lines), the StableHLO JAX
gave XLA as `module_NNNN.NAME/module.mlir`, and much else that is not a module to reduce:
`…cpu_after_optimizations*.txt`, `.debug_options`, LLVM `.ll` / `.o` files and, with
`--xla_dump_hlo_pass_re`, one file per pass (`module_NNNN.NAME.0005.PIPELINE.after_X.before_Y.txt`).
The dump is written at compile time, so a program that dies while running still leaves it.

HLO is turned into StableHLO by jaxlib's own converter (`hlo_module_from_text`, then
`hlo_to_stablehlo` on the module's proto, as jax2tf's `call_tf` does) and back by
`mlir_module_to_xla_computation(…).as_hlo_text()` (as `Lowered.compiler_ir("hlo")` does), large
constants printed in full. The way back folds identity `broadcast_in_dim`s and reshapes that undo
each other, once. The StableHLO is printed as `jax.jit(f).lower(x).as_text()` prints it: a public
`@main`, no debug locations unless asked, without the private functions the converter leaves
behind once it has inlined them into regions, and without the default-valued `mhlo.*` module
attributes. Optimized HLO (`is_scheduled=true`) is refused: its fusions lose their backend config
on the way and no longer compile. A dump's HLO leaves large constants out (`constant({...})`,
unless XLA ran with `--xla_dump_large_constants`): `elided_constants` names them; converted, they
hold XLA's parser's filler values, not the program's.

Everything here runs where the caller runs (the IR worker): jax is imported inside the functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HLO = "before_optimizations"
MLIR = "mlir"
_STAGE_ORDER = {HLO: 0, MLIR: 1}
#: `module_0006.jit_f.…` (optionally after a `--xla_dump_include_timestamp` prefix)
_MODULE_NAME = re.compile(r"^(?:\d+\.)?module_(\d+)\.(.+)$")
#: a per-pass file's pass number, as in `module_0006.jit_f.0005.simplification.after_….txt`
_PER_PASS = re.compile(r"\.\d{4}\.")
#: module attributes the converter adds at their default values; they only distract
_DEFAULT_ATTRIBUTES = {"mhlo.cross_program_prefetches": "[]", "mhlo.input_output_alias": "[]",
                       "mhlo.is_dynamic": "false", "mhlo.use_auto_spmd_partitioning": "false"}
#: directories of installed packages and of JAX itself: not the user's source
_NOT_USERS = re.compile(r"[/\\](?:site-packages|dist-packages)[/\\]|[/\\]jax(?:lib)?[/\\]_src[/\\]")


@dataclass(frozen=True)
class Dumped:
    """One module of an XLA dump: `name` as XLA names it (`jit_f`), the file it came from, its
    text (`hlo_text`: HLO when `stage` is "before_optimizations", StableHLO MLIR when "mlir"),
    and `number`, XLA's module number (the order it compiled them)."""
    name: str
    path: Path
    hlo_text: str
    number: int
    stage: str

    @property
    def is_hlo(self) -> bool:
        return self.stage == HLO

    def stablehlo(self) -> str:
        """The module as StableHLO text (converted when it is HLO)."""
        return hlo_to_stablehlo(self.hlo_text) if self.is_hlo else self.hlo_text


def is_hlo_text(text: str) -> bool:
    """Whether `text` is an HLO module (its first word, after blank lines and comments, is
    `HloModule`) rather than MLIR."""
    text = re.sub(r"/\*.*?\*/", "", text[:100_000], flags=re.S)
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("//"):
            return line.split(None, 1)[0].rstrip(",") == "HloModule"
    return False


def hlo_to_stablehlo(hlo_text: str, *, locations: bool = False) -> str:
    """The StableHLO module (pretty form, entry function `@main`, public) of an HLO module's text;
    debug locations (the HLO's op names and source lines) are kept only when `locations` is true.
    Raises ValueError, one line, when the text is not HLO XLA can read, or is an optimized module.
    A constant the dump elided (`constant({...})`, see `elided_constants`) gets XLA's parser's
    filler values, not the program's."""
    from jax._src.lib import xla_client
    from jaxlib.mlir import ir, passmanager

    if not is_hlo_text(hlo_text):
        raise ValueError("not HLO text: it does not begin with `HloModule`")
    if re.search(r"^\s*HloModule [^\n]*\bis_scheduled=true", hlo_text, re.M):
        raise ValueError("an optimized HLO module (is_scheduled=true, as in *.cpu_after_optimizations.txt): "
                         "its fusions do not convert back; use the module's *.before_optimizations.txt")
    try:
        hlo_module = xla_client.hlo.hlo_module_from_text(hlo_text)
        bytecode = xla_client._xla.mlir.hlo_to_stablehlo(hlo_module.as_serialized_hlo_module_proto())
    except Exception as exc:  # XLA's parser: JaxRuntimeError (INVALID_ARGUMENT …)
        raise ValueError(f"HLO does not parse: {_xla_error(exc)}") from None
    with _context():
        module = ir.Module.parse(bytecode)
        _make_entry_main(module)
        passmanager.PassManager.parse("builtin.module(symbol-dce)").run(module.operation)
        attributes = module.operation.attributes
        for name, default in _DEFAULT_ATTRIBUTES.items():
            if name in attributes and str(attributes[name]) == default:
                del attributes[name]
        return module.operation.get_asm(enable_debug_info=locations)


def converted(hlo_text: str) -> dict:
    """`hlo_to_stablehlo` as the IR worker answers it: {"module": …}, or {"error": why not}."""
    try:
        return {"module": hlo_to_stablehlo(hlo_text)}
    except ValueError as exc:
        return {"error": str(exc)}


def stablehlo_to_hlo(module_text: str) -> str:
    """The HLO text of a StableHLO module (for XLA's own tools: `run_hlo_module`, `hlo-opt`).
    Raises ValueError, one line, when jaxlib cannot convert it."""
    from jax._src.lib import xla_client

    try:
        computation = xla_client._xla.mlir.mlir_module_to_xla_computation(
            module_text, use_tuple_args=False, return_tuple=False)
    except Exception as exc:
        raise ValueError(f"the module does not convert to HLO: {_xla_error(exc)}") from None
    return computation.as_hlo_text(print_large_constants=True)  # every value, not `{...}`


def looks_like_dump(folder) -> bool:
    """Whether `folder` is a folder XLA dumped modules into (`--xla_dump_to`)."""
    folder = Path(folder)
    return folder.is_dir() and any(True for _ in _module_files(folder))


def dump_modules(folder) -> list[Dumped]:
    """Every module of an XLA dump folder, in the order XLA compiled them: the HLO JAX gave XLA
    (`*.before_optimizations.txt`) and, where the dump has it, the StableHLO (`*.mlir` naming an
    `@main`); after-optimization, per-pass, buffer, `.ll`, `.o` and `.debug_options` files are
    left out. Raises ValueError, one line, for a folder without a module."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    found = []
    for path, number, name, stage in _module_files(folder):
        text = path.read_text(errors="replace")
        if stage == MLIR and "@main" not in text:
            continue  # an emitter's kernel, not a whole module
        found.append(Dumped(name, path, text, number, stage))
    if not found:
        raise ValueError(f"{folder} holds no XLA module (no *.before_optimizations.txt or module .mlir file; "
                         "it is made by running the program with XLA_FLAGS=--xla_dump_to=FOLDER)")
    return sorted(found, key=lambda d: (d.number, _STAGE_ORDER[d.stage], d.name, str(d.path)))


def source_lines(hlo_text: str) -> list[str]:
    """The user's source lines (`FILE:LINE`, sorted) an HLO module's metadata names: its
    FileNames / FileLocations tables, or `source_file=… source_line=…` in op metadata; lines of
    installed packages and of JAX itself are left out."""
    files = dict(re.findall(r'^(\d+) "((?:[^"\\]|\\.)*)"$', _table(hlo_text, "FileNames"), re.M))
    lines = {(files.get(file_id, ""), int(line)) for file_id, line in
             re.findall(r"file_name_id=(\d+)\b.*?\bline=(\d+)", _table(hlo_text, "FileLocations"))}
    lines |= {(file, int(line)) for file, line in
              re.findall(r'source_file="((?:[^"\\]|\\.)*)" source_line=(\d+)', hlo_text)}
    return [f"{file}:{line}" for file, line in sorted(lines) if file and not _NOT_USERS.search(file)]


def elided_constants(hlo_text: str) -> list[str]:
    """The instructions whose values the HLO text leaves out (`constant({...})`: XLA dumps large
    constants so unless run with `--xla_dump_large_constants`)."""
    return re.findall(r"^\s*(?:ROOT\s+)?%?([\w.-]+)\s*=.*?\bconstant\(\{\.\.\.\}\)", hlo_text, re.M)


def _module_files(folder: Path):
    """(path, number, name, stage) of the files of a dump that hold whole modules, by name."""
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        if path.name.endswith(".before_optimizations.txt"):
            found = _MODULE_NAME.match(path.name[:-len(".before_optimizations.txt")])
            stage = HLO
        elif path.suffix == ".mlir":
            # `module_0006.jit_f/module.mlir`, or a `module_0006.jit_f….mlir` file
            owner = path.parent.name if path.name == "module.mlir" else path.name[:-len(".mlir")]
            found = _MODULE_NAME.match(owner)
            stage = MLIR
        else:
            continue
        if found and not _PER_PASS.search("." + found.group(2) + "."):
            yield path, int(found.group(1)), found.group(2), stage


def _table(hlo_text: str, title: str) -> str:
    """The lines of one of the HLO text's tables (`FileNames`, `FileLocations` …)."""
    found = re.search(rf"^{title}\n(.*?)(?:\n\s*\n|\Z)", hlo_text, re.M | re.S)
    return found.group(1) if found else ""


def _make_entry_main(module) -> None:
    """Name the entry function `main` and make it explicitly public, as JAX does."""
    from jaxlib.mlir import ir

    functions = [op for op in module.body.operations if op.operation.name == "func.func"]
    public = [f for f in functions if "sym_visibility" not in f.attributes
              or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"]
    if not public:
        return
    entry = next((f for f in public if ir.StringAttr(f.attributes["sym_name"]).value == "main"), public[-1])
    old = ir.StringAttr(entry.attributes["sym_name"]).value
    if old != "main":
        taken = {ir.StringAttr(f.attributes["sym_name"]).value for f in functions}
        for other in functions:
            if ir.StringAttr(other.attributes["sym_name"]).value == "main":  # a private "main": move aside
                spare = next(f"main_{i}" for i in range(1, 1000) if f"main_{i}" not in taken)
                ir.SymbolTable.replace_all_symbol_uses("main", spare, module.operation)
                other.attributes["sym_name"] = ir.StringAttr.get(spare)
        ir.SymbolTable.replace_all_symbol_uses(old, "main", module.operation)
        entry.attributes["sym_name"] = ir.StringAttr.get("main")
    entry.attributes["sym_visibility"] = ir.StringAttr.get("public")


def _context():
    """An MLIR context with every dialect JAX emits (JAX's own `make_ir_context`)."""
    from jax._src.interpreters import mlir as jax_mlir

    ctx = jax_mlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    return ctx


def _xla_error(exc: Exception) -> str:
    """One line of an XLA error: the parser's `was parsing L:C: error: …` line when there is one,
    else its first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("was parsing")), lines[0] if lines else type(exc).__name__)
    return detail[:300]
