"""The engine's representation of an MLIR program at the IR level (`MlirModule`): its size and key,
whether it verifies, its normal form and operations, its work item for the passes, each asked of the
IR worker (`reducer.levels.mlir.ir_worker`) when it has one, and cached by the program's text.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict

from reducer.levels.mlir import ir_tools
from reducer.levels.mlir.ir_worker import Crashed, RemoteItem
from reducer.levels.mlir.module import info, normalize_here, ops_here, parse_error
from reducer.levels.mlir.text import enzyme_parse_error, has_enzyme


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
        return ir_tools.Item(program, self.form, self.keep)

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
            return ir_tools.default_pipeline(module_text)

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
