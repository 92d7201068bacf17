"""What the IR level reads: an MLIR module (an Enzyme-JAX dump with its pipeline, or a plain module),
a file of HLO text, or an XLA dump folder (`XLA_FLAGS=--xla_dump_to=DIR`), whose modules are
tried newest first (a program that dies leaves the module it died in last). HLO goes through
jaxlib's own converter (`xla_dump`) in the IR worker, and back for the reproducer's `repro.hlo`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reducer.errors import BAD_MLIR, NOT_FOUND, ReducerError
from reducer.readers.inputs import read_text
from reducer.levels.mlir import ir_worker, xla_dump


@dataclass(frozen=True)
class Given:
    """The modules to try, (name, StableHLO text), in order; `from_xla` when they came from XLA
    (HLO text or a dump folder): XLA alone runs them, never an Enzyme-JAX pipeline."""

    modules: list[tuple[str, str]]
    from_xla: bool


def read(path: Path) -> Given:
    if path.is_dir():
        try:
            dumped = [d for d in xla_dump.dump_modules(path) if d.is_hlo] or xla_dump.dump_modules(path)
        except ValueError as exc:
            raise ReducerError(f"{path}: is a folder, and not an XLA dump: {exc}", NOT_FOUND) from None
        texts = [(f"{path.name}/{d.path.name}", d.hlo_text) for d in reversed(dumped)]
    else:
        texts = [(path.name, read_text(path, "an MLIR module in text form"))]  # one clear line per bad input
    hlo = [xla_dump.is_hlo_text(text) for _, text in texts]
    return Given([(name, stablehlo(name, text) if is_hlo else text) for (name, text), is_hlo in zip(texts, hlo)],
                 len(texts) > 1 or any(hlo))


def stablehlo(name: str, text: str) -> str:
    """HLO text as StableHLO, converted in the IR worker (a converter that crashes costs a worker)."""
    answer = ir_worker.shared().call({"do": "from_hlo", "text": text})
    if answer.get("error"):
        raise ReducerError(f"{name}: HLO text that cannot be converted to StableHLO: {answer['error']}", BAD_MLIR)
    return answer["module"]


def as_hlo(worker, module_text: str, log) -> str | None:
    """The module as HLO text, for XLA's own tools (None when XLA's exporter refuses it)."""
    try:
        return worker.call({"do": "to_hlo", "module": module_text}).get("text")
    except Exception as exc:
        log(f"no HLO text for the module: {exc}")
        return None
