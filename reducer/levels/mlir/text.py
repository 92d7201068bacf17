"""Modules as text, for what the MLIR bindings in jaxlib cannot hold: Enzyme-JAX's own parser (it
registers every dialect Enzyme-JAX knows; enzyme-ad exposes it only through its pass-pipeline
runner, run here with an empty pipeline), the operations of a module read line by line, and what
MLIR writes to standard error while it runs (`captured_stderr`)."""
from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager

#: a line that holds an operation, in text form: `%r = dialect.op …` or `dialect.op …` or `"dialect.op"(…)`
TEXT_OP = re.compile(r'^\s*(?:%[^=]+=\s*)?"?(?P<name>[A-Za-z_][\w$]*\.[\w$.]+)"?[\s({<@%:]', re.M)
TEXT_FRAME = re.compile(r"(^|\.)(return|yield|terminator)$|^(func\.func|builtin\.module|module)$")


def text_ops(module_text: str) -> list[str]:
    """The operations of a module read as text: what counts towards its size in text form."""
    return [m.group("name") for m in TEXT_OP.finditer(module_text) if not TEXT_FRAME.search(m.group("name"))]


def has_enzyme() -> bool:
    import importlib.util

    return importlib.util.find_spec("enzyme_ad") is not None


def enzyme_parse_error(module_text: str) -> str | None:
    """Why Enzyme-JAX's own parser (every dialect it registers) refuses the module; None when it
    reads it, or when enzyme-ad is not installed."""
    try:
        from enzyme_ad.jax import enzyme_call
    except ImportError:
        return None
    with captured_stderr() as err:
        try:
            enzyme_call.run_pass_pipeline([], module_text, "")
            return None
        except Exception as exc:
            failure = str(exc)
    diag = re.search(r'error: (.*)', err["text"])
    return (diag.group(1) if diag else failure.splitlines()[0]).strip()[:300] or "refused"


def pipeline_diagnostic(module_text: str, pipeline: str) -> str | None:
    """The first error diagnostic (normalised, as the IR oracles keep it) of Enzyme-JAX's pipeline
    on the module; None when it runs without error."""
    from enzyme_ad.jax import enzyme_call

    from oracles.base import normalize_message

    with captured_stderr() as err:
        try:
            enzyme_call.run_pass_pipeline([], module_text, pipeline)
            return None
        except Exception as exc:
            failure = str(exc)
    m = re.search(r"(?:^|:\s)error:\s*(.+)$", err["text"] + "\n" + failure, re.M)
    return normalize_message(m.group(1)) if m else None


@contextmanager
def captured_stderr():
    """Collect what is written to file descriptor 2 (MLIR prints its diagnostics there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    box = {"text": ""}
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")
