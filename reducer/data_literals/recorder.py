"""Recording what a program reads from its data files: the recorder and the run under it.

The recorder runs in the candidate's interpreter (`python -m reducer.data_literals SCRIPT OUTDIR`,
`record_main`): it wraps the loaders in `LOADERS`, `pathlib.Path.read_text` / `read_bytes` and `open`,
and for each call made from the program's own code writes into OUTDIR's `records.json` the call's
exact span, the file it read and a JSON description of what came out (arrays as `.npy` files beside
it), which `reducer.data_literals.writeback` turns back into expressions. `record` runs it, from
reducer's process, on a program in a scratch folder as a candidate runs.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from reducer.data_literals import LITERAL_FILE_BYTES

#: what a value may hold, at most, to be written back (nodes)
MAX_NODES = 20000
#: the loaders wrapped: (module, attribute, index of the path argument or None for a file object)
LOADERS = (("numpy", "load", 0), ("numpy", "loadtxt", 0), ("numpy", "genfromtxt", 0), ("numpy", "fromfile", 0),
           ("json", "load", 0), ("pickle", "load", 0), ("safetensors.numpy", "load_file", 0))


# -- the recorder (runs in the candidate's interpreter) ---------------------------------------------
class _Recorder:
    def __init__(self, script: str, out: str):
        self.script = os.path.abspath(script)
        self.out = out
        self.records: list[dict] = []
        self.arrays = 0
        self.busy = False

    def site(self, depth: int = 2):
        """The span of the call the program made, when the caller `depth` frames up is the program."""
        frame = sys._getframe(depth)
        if os.path.abspath(frame.f_code.co_filename) != self.script:
            return None
        positions = list(frame.f_code.co_positions())
        index = frame.f_lasti // 2
        if not 0 <= index < len(positions) or None in positions[index]:
            return None
        return list(positions[index])

    def save(self):
        with open(os.path.join(self.out, "records.json.tmp"), "w") as fh:
            json.dump(self.records, fh)
        os.replace(os.path.join(self.out, "records.json.tmp"), os.path.join(self.out, "records.json"))

    def encode(self, value, budget: list):
        """A JSON description of `value` that `expression` writes back, or None when it cannot be."""
        import numpy as np

        budget[0] -= 1
        if budget[0] < 0:
            return None
        if value is None or isinstance(value, (bool, int, str)):
            return {"lit": repr(value)}
        if isinstance(value, float):
            return {"lit": _float(value)}
        if isinstance(value, bytes):
            return {"lit": repr(value)} if len(value) <= LITERAL_FILE_BYTES else None
        if isinstance(value, np.generic):
            value = np.asarray(value)
            if _dtype_ok(value.dtype):
                return {"scalar": value.dtype.name, "value": element_source(value[()])}
            return None
        if isinstance(value, np.ndarray):
            if not _dtype_ok(value.dtype):
                return None
            key = f"a{self.arrays}"
            self.arrays += 1
            np.save(os.path.join(self.out, key + ".npy"), np.asarray(value), allow_pickle=False)
            return {"array": key, "size": int(value.size), "dtype": value.dtype.name, "shape": list(value.shape)}
        if type(value).__name__ == "NpzFile":
            items = [[{"lit": repr(k)}, self.encode(value[k], budget)] for k in value.files]
            return {"dict": items} if all(v is not None for _, v in items) else None
        if type(value) is dict:
            items = [[self.encode(k, budget), self.encode(v, budget)] for k, v in value.items()]
            return {"dict": items} if all(k is not None and v is not None for k, v in items) else None
        if type(value) in (list, tuple):
            items = [self.encode(v, budget) for v in value]
            return {type(value).__name__: items} if all(v is not None for v in items) else None
        return None

    def record(self, kind: str, name: str, site, path, value) -> None:
        entry = {"kind": kind, "name": name, "site": site, "path": path, "value": None}
        try:
            entry["value"] = self.encode(value, [MAX_NODES]) if kind == "loader" else None
        except Exception:  # what cannot be described is kept as a file
            entry["value"] = None
        self.records.append(entry)
        self.save()

    def wrap(self, func, name: str, path_index):
        recorder = self

        def wrapper(*args, **kwargs):
            if recorder.busy:
                return func(*args, **kwargs)
            site = recorder.site()
            recorder.busy = site is not None
            try:
                result = func(*args, **kwargs)
            finally:
                recorder.busy = False
            if site is not None:
                target = args[path_index] if path_index is not None and len(args) > path_index else \
                    next(iter(kwargs.values()), None)
                path = _path_of(target)
                if path is not None:
                    recorder.record("loader", name, site, path, result)
            return result

        wrapper.__wrapped__ = func
        return wrapper

    def install(self) -> None:
        import builtins
        import importlib
        import pathlib

        for module, attr, index in LOADERS:
            try:
                mod = importlib.import_module(module)
                setattr(mod, attr, self.wrap(getattr(mod, attr), f"{module}.{attr}", index))
            except Exception:  # a library that is not installed is read by no program here
                continue
        opener = builtins.open
        recorder = self

        def open_(file, mode="r", *args, **kwargs):
            site = None if recorder.busy else recorder.site()
            handle = opener(file, mode, *args, **kwargs)
            if site is not None and not any(c in mode for c in "wax+") and _path_of(file) is not None:
                recorder.record("open", "open", site, _path_of(file), None)
                recorder.records[-1]["mode"] = mode
            return handle

        builtins.open = open_
        io.open = open_
        for attr in ("read_text", "read_bytes"):
            method = getattr(pathlib.Path, attr)

            def reader(self_, *args, _method=method, _attr=attr, **kwargs):
                site = None if recorder.busy else recorder.site()
                recorder.busy = True
                try:
                    result = _method(self_, *args, **kwargs)
                finally:
                    recorder.busy = False
                if site is not None:
                    recorder.record("loader", f"Path.{_attr}", site, str(self_), result)
                return result

            setattr(pathlib.Path, attr, reader)


def _path_of(target) -> str | None:
    """The absolute path of the file a loader was given (a path or an open file), if it is one."""
    if isinstance(target, (str, os.PathLike)):
        path = os.fspath(target)
    else:
        path = getattr(target, "name", None)
    return os.path.abspath(path) if isinstance(path, str) and os.path.isfile(path) else None


def _dtype_ok(dtype) -> bool:
    import numpy as np

    return dtype.kind in "biufc" and dtype.fields is None and np.dtype(dtype.name) == dtype


def _float(x: float) -> str:
    if x != x:
        return "float('nan')"
    if x in (float("inf"), float("-inf")):
        return "float('inf')" if x > 0 else "-float('inf')"
    return repr(x)


def element_source(x) -> str:
    """One array element as Python source, exact for its dtype (`str` of a float32 is its shortest
    round-tripping form)."""
    import numpy as np

    if isinstance(x, (np.bool_, bool)):
        return repr(bool(x))
    if isinstance(x, (np.integer, int)):
        return repr(int(x))
    if isinstance(x, (np.complexfloating, complex)):
        return f"complex({element_source(np.real(x))}, {element_source(np.imag(x))})"
    value = float(x)
    if value != value or value in (float("inf"), float("-inf")):
        return _float(value)
    return str(x) if isinstance(x, np.floating) else repr(value)


def record_main(argv: list[str]) -> None:
    """`python -m reducer.data_literals SCRIPT OUTDIR`: run SCRIPT (as the harness runs candidates)
    with the loaders recorded into OUTDIR."""
    script, out = argv[0], argv[1]
    recorder = _Recorder(script, out)
    recorder.save()
    recorder.install()
    from reducer.harness import run_script

    sys.exit(run_script(script, [script]))


# -- running it (in reducer's process) -------------------------------------------------------------
def record(sandbox, program: str, limits) -> tuple[list[dict], Path]:
    """Run `program` once under the recorder, in a scratch folder as a candidate runs; its records
    and the folder they are in (the caller removes it)."""
    scratch = sandbox.prepare(program)
    out = scratch / ".reducer-data"
    out.mkdir()
    env = sandbox.environment(scratch, limits)
    env.pop("REDUCER_CHECK_GRADIENTS", None)
    try:
        subprocess.run([sandbox.python, "-m", "reducer.data_literals", sandbox.script_name, str(out)], cwd=scratch,
                       env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=limits.timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        pass
    try:
        records = json.loads((out / "records.json").read_text())
    except (OSError, ValueError):
        records = []
    # the records name the copies in the scratch folder; the originals are what the job knows
    return records, scratch

