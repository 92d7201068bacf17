"""The wrapper every candidate runs under: `python -m reducer.harness SCRIPT [ARGS…]`.

It applies the limits the sandbox asks for (address space, output size, no core dumps), makes the
script see itself as `__main__` with its own `sys.argv`, and runs JAX's CPU computations
synchronously (`jax_cpu_enable_async_dispatch` off), so that a computation that dies does so while
the thread that launched it waits in it, and a crash is told by where the program was, not by where
the main thread happened to be. After the program, it waits for what is still running (a crash
there is still the program's) and collects garbage, as an interpreter does at exit.

With `REDUCER_CHECK_GRADIENTS` set, the watches observe the program (`reducer.cross_checks`): the
Enzyme-JAX derivatives it takes, compared with JAX's AD (`gradients`), and, for a program that fails,
the results of its `jit`-compiled functions, compared with the same functions run op by op
(`results`). They only observe: their checks run after the program, on what it computed, with their
output kept out of the program's; the program's exit status is written to the JSON file named by
`REDUCER_HARNESS_OUT` before they start, so a check that dies cannot pass for the program's failure
(`oracles.outcome.program_outcome`).
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import runpy
import sys
import traceback

from reducer import compile_cache


def apply_limits() -> None:
    limits = json.loads(os.environ.get("REDUCER_LIMITS") or "{}")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get("memory_mb"):
        size = int(limits["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if limits.get("output_mb"):
        size = int(limits["output_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def synchronous_dispatch(script: str) -> None:
    """Run CPU computations on the thread that launches them. JAX reads the option when it creates
    its CPU client, so jax is imported (as warm workers have it already) and set before the program;
    a program that never names jax is spared importing it (seconds in a fresh interpreter)."""
    try:
        if "jax" not in sys.modules:
            with open(script, "rb") as fh:
                if b"jax" not in fh.read():
                    return
        import jax

        jax.config.update("jax_cpu_enable_async_dispatch", False)
        compile_cache.shared_by_candidates()
    except Exception:  # no JAX, or one without the option
        pass


def settle() -> None:
    """Wait for the computations and callbacks still running, then collect garbage."""
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            jax.effects_barrier()
            for array in jax.live_arrays():
                array.block_until_ready()
        except Exception:  # a deleted or donated array, a backend that never started: nothing to wait for
            pass
    gc.collect()


class Watches:
    """The gradient and result watches of one run, and the report they leave."""

    def __init__(self, wanted: str = "gradients,results"):
        from reducer.cross_checks.gradients import GradientWatch
        from reducer.cross_checks.results import ResultWatch

        self.gradients, self.results = GradientWatch(), ResultWatch()
        self.wanted = {w.strip() for w in wanted.split(",")}

    def install(self) -> None:
        if "gradients" in self.wanted:
            self.gradients.install()
        if "results" in self.wanted:
            self.results.install()

    def uninstall(self) -> None:
        self.gradients.uninstall()
        self.results.uninstall()

    def finish(self, code: int) -> None:
        """Put JAX back, then check what the program computed (results only when it failed)."""
        self.uninstall()
        out = os.environ.get("REDUCER_HARNESS_OUT")
        report = {"program": {"exit": code}, "gradients": self.gradients.counts, "checks": [], "results": []}
        check_results = code != 0 and bool(self.results.calls)
        if out and (self.gradients.samples or check_results):
            _write(out, {**report, "checking": True})
            with _quiet(out + ".log"):
                report["checks"] = _guarded(self.gradients.check, report, "check_error")
                if check_results:
                    report["results"] = _guarded(self.results.check, report, "results_error")
        if out:
            _write(out, report)


def _guarded(check, report: dict, key: str) -> list:
    try:
        return check()
    except Exception as exc:  # the program's own failure must still show
        report[key] = f"{type(exc).__name__}: {exc}"
        return []


def _write(path: str, data: dict) -> None:
    """At once (`reducer.files.write_atomic`): a heap that a crashing computation corrupted can kill
    the process while it writes, which must leave the report before, not half of one."""
    from reducer.files import write_atomic

    write_atomic(path, json.dumps(data, default=repr))


@contextlib.contextmanager
def _quiet(path: str):
    """Send descriptors 1 and 2 (and so faulthandler and native code), and `sys.stdout` and
    `sys.stderr`, to `path` for a while."""
    streams = (sys.stdout, sys.stderr)
    for stream in streams:
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "w", buffering=1) as fh:
        try:
            os.dup2(fh.fileno(), 1)
            os.dup2(fh.fileno(), 2)
            sys.stdout = sys.stderr = fh
            yield
        finally:
            sys.stdout, sys.stderr = streams
            fh.flush()
            for fd, copy in ((1, saved[0]), (2, saved[1])):
                os.dup2(copy, fd)
                os.close(copy)


@contextlib.contextmanager
def exit_handlers(script: str):
    """Keep the functions the script itself registers with `atexit`, so that they run when it ends,
    as at an interpreter's exit (a long-lived runner never exits; a fresh interpreter would run them
    again, so they are not registered there)."""
    import atexit

    path, kept = os.path.abspath(script), []
    register, unregister = atexit.register, atexit.unregister

    def keep(func, *args, **kwargs):
        if os.path.abspath(sys._getframe(1).f_code.co_filename) != path:
            return register(func, *args, **kwargs)
        kept.append((func, args, kwargs))
        return func

    def drop(func):
        kept[:] = [h for h in kept if h[0] is not func]
        unregister(func)

    atexit.register, atexit.unregister = keep, drop
    try:
        yield kept
    finally:
        atexit.register, atexit.unregister = register, unregister


def _run_exit_handlers(kept: list) -> None:
    for func, args, kwargs in reversed(kept):
        try:
            func(*args, **kwargs)
        except SystemExit:
            pass
        except BaseException:
            print(f"Exception ignored in atexit callback: {func!r}", file=sys.stderr)
            traceback.print_exc()


def run_program(script: str) -> int:
    """Run `script` as `__main__`, then the exit handlers it registered; its exit code (an uncaught
    exception prints its traceback and gives 1, `sys.exit` gives its code)."""
    with exit_handlers(script) as kept:
        code = _run_main(script)
    _run_exit_handlers(kept)
    return code


def _run_main(script: str) -> int:
    try:
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:
        sys.excepthook(*sys.exc_info())  # as Python reports it; a hook the program set sees it too
        return 1


def run_script(script: str, argv: list[str] | None = None) -> int:
    """Run `script` as `python SCRIPT` would, in this interpreter, under the limits and watches;
    returns its exit code."""
    apply_limits()
    sys.argv = list(argv or [script])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    synchronous_dispatch(script)
    # REDUCER_WATCHES narrows them to what the oracle judges by (`Oracle.watches`)
    watches = (Watches(os.environ.get("REDUCER_WATCHES") or "gradients,results")
               if os.environ.get("REDUCER_CHECK_GRADIENTS") else None)
    if watches is not None:
        watches.install()
    code = run_program(script)
    settle()
    if watches is not None:
        watches.finish(code)
    return code


def main(argv: list[str]) -> None:
    sys.exit(run_script(argv[0], argv))


if __name__ == "__main__":
    main(sys.argv[1:])
