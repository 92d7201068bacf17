"""The public library call a program made, recorded on its equations while they are encoded (the
words `reducer.levels.jaxpr.public_calls` writes them back in).

Every JAX equation keeps the traceback of its tracing. Walking its frames from the outermost, the
first frame of a function in `PUBLIC` (a `jax.numpy.fft` or `jax.ops` function in jax's own source)
names the public call the program made; the equation gets `src="jnp.fft.rfft"` (`record`). An
equation traced inside a nested jitted library function (`jnp.fft.rfft` stages a `jit` of its `fft`
primitive) has no frame of the program's: it takes the public call of the equation it is nested in
(`inside`). Nothing is recorded when no handled function was called.
"""
from __future__ import annotations

import contextlib
import os
import sysconfig

from reducer.levels.jaxpr.model import Equation

#: jax's own module (its path under the `jax` package) -> (the public namespace, the functions handled)
PUBLIC = {
    "_src/numpy/fft.py": ("jnp.fft", ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2",
                                      "fftn", "ifftn", "rfftn", "irfftn")),
    "_src/ops/scatter.py": ("jax.ops", ("segment_sum", "segment_max", "segment_min", "segment_prod")),
}
_OUTER: list = []  # the public call of each equation whose nested jaxprs are being encoded
_DIRS: list = []


def _library_dirs() -> tuple:
    """Where JAX and the standard library live: frames there are not the program's."""
    if not _DIRS:
        import jax
        import jaxlib

        _DIRS.extend(os.path.dirname(m.__file__) + os.sep for m in (jax, jaxlib))
        _DIRS.append(os.path.join(sysconfig.get_paths()["stdlib"], ""))
    return tuple(_DIRS)


def public_name(frames) -> tuple[str | None, bool]:
    """The handled public function the frames (innermost first) went through, outermost first, and
    whether any frame is the program's own."""
    libraries = _library_dirs()
    program = False
    for frame in reversed(list(frames)):
        path = frame.file_name.replace("\\", "/")
        if not path.startswith(libraries):
            program = True
            continue
        for module, (space, names) in PUBLIC.items():
            name = frame.function_name.rsplit(".", 1)[-1]
            if path.endswith("/jax/" + module) and name in names:
                return f"{space}.{name}", True
    return None, program


def record(e, eqn: Equation) -> None:
    """Set `eqn.src` to the public call the JAX equation `e` comes from, when a handled one."""
    tb = getattr(getattr(e, "source_info", None), "traceback", None)
    src, program = public_name(tb.frames) if tb is not None else (None, False)
    if src is None and not program and _OUTER:
        src = _OUTER[-1]
    if src:
        eqn.src = src


@contextlib.contextmanager
def inside(eqn: Equation):
    """While the nested jaxprs of `eqn` are encoded: those of a `jit` inherit its public call."""
    _OUTER.append(eqn.src if eqn.primitive in ("jit", "pjit") else None)
    try:
        yield
    finally:
        _OUTER.pop()
