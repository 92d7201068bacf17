"""Writing the recorded reads back into the program's source: `rewrite`.

Each loading call the recorder (`reducer.data_literals.recorder`) saw return one value that can be
written back is replaced, in the program's syntax tree (`ast`), by an expression for that value:
small arrays as `np.array([...])` literals, larger ones as `_repro_data['a0']` from `repro_data.npz`,
containers of these as Python literals. `open` calls whose file object is no longer read go; small
files still read are inlined as `io.StringIO` / `io.BytesIO`. The imports the new expressions need go
at the top of the module. `Rewrite` says which files the program no longer reads and which it still does.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import os
from pathlib import Path

from reducer.data_literals import DATA_NPZ, LITERAL_ELEMENTS, LITERAL_FILE_BYTES
from reducer.data_literals.recorder import element_source

#: the name the reproducer binds repro_data.npz to
DATA_NAME = "_repro_data"


def _literal_array(array, np_name: str) -> str:
    import numpy as np

    dtype = f"{np_name}.{array.dtype.name}" if hasattr(np, array.dtype.name) else repr(array.dtype.name)
    if array.size == 0:
        return f"{np_name}.zeros({tuple(array.shape)!r}, dtype={dtype})"

    def nest(a) -> str:
        if a.ndim == 0:
            return element_source(a[()])
        return "[" + ", ".join(nest(row) for row in a) + "]"

    return f"{np_name}.array({nest(array)}, dtype={dtype})"


class _Writer:
    """Turns recorded values into expressions; larger arrays go into `arrays` (for repro_data.npz)."""

    def __init__(self, folder: Path, np_name: str):
        self.folder = folder
        self.np_name = np_name
        self.arrays: dict = {}
        self.uses_numpy = False

    def expression(self, desc) -> str:
        import numpy as np

        if "lit" in desc:
            return desc["lit"]
        if "scalar" in desc:
            self.uses_numpy = True
            dtype = desc["scalar"]
            return f"{self.np_name}.{dtype}({desc['value']})" if hasattr(np, dtype) else \
                f"{self.np_name}.array({desc['value']}, dtype={dtype!r})[()]"
        if "array" in desc:
            self.uses_numpy = True
            array = np.load(self.folder / f"{desc['array']}.npy", allow_pickle=False)
            if array.size <= LITERAL_ELEMENTS:
                return _literal_array(array, self.np_name)
            key = f"a{len(self.arrays)}"
            self.arrays[key] = array
            return f"{DATA_NAME}[{key!r}]"
        if "dict" in desc:
            return "{" + ", ".join(f"{self.expression(k)}: {self.expression(v)}" for k, v in desc["dict"]) + "}"
        if "list" in desc:
            return "[" + ", ".join(self.expression(v) for v in desc["list"]) + "]"
        if "tuple" in desc:
            items = [self.expression(v) for v in desc["tuple"]]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        raise ValueError(f"unknown value description {sorted(desc)}")


@dataclasses.dataclass
class Rewrite:
    program: str
    arrays: dict  # key -> array, for repro_data.npz
    rewritten: set  # files no call of the program reads any more
    kept: set  # files a call that could not be written back still reads
    sites: int  # calls written back


def _span(node) -> tuple:
    return (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)


def _numpy_alias(tree: ast.Module) -> tuple[str, ast.stmt | None]:
    """The name the module binds numpy to at its top level, and that import; else a free name."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "numpy":
                    return alias.asname or "numpy", stmt
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {a.asname or a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
         for a in n.names}
    for name in ("np", "numpy", "_np"):
        if name not in used:
            return name, None
    return "_repro_np", None


def _insert_at(tree: ast.Module) -> int:
    from reducer.readers.inputs import _top

    return _top(tree)


def rewrite(source: str, records: list[dict], folder: Path) -> Rewrite:
    """`source` with the recorded reads written back (see the package's docstring)."""
    tree = ast.parse(source)
    np_name, np_import = _numpy_alias(tree)
    edit = _Edit(_Writer(Path(folder), np_name))
    edit.loader_calls(tree, records, folder)
    tree = _Replace(edit).visit(tree)
    # `open(...)` calls: gone when what they opened is no longer read, else the file's text inline
    edit.open_calls(tree)
    tree = _Inline(edit).visit(tree)
    _hoist_from_checks(tree, edit.replaced)
    edit.add_header(tree, np_name, np_import)
    ast.fix_missing_locations(tree)
    rewritten = {p for p, how in edit.paths_read.items() if how == {"rewritten"}}
    kept = {p for p, how in edit.paths_read.items() if "kept" in how}
    return Rewrite(ast.unparse(tree) + "\n", edit.writer.arrays, rewritten, kept, len(edit.replace) + len(edit.inline))


class _Edit:
    """What `rewrite` puts in place of the recorded calls, and how each file read is left by it."""

    def __init__(self, writer: _Writer):
        self.writer = writer
        self.replace: dict[int, ast.expr] = {}  # id(call) -> expression
        self.replaced: set[int] = set()  # the expressions put in
        self.paths_read: dict[str, set] = {}  # file -> how: "rewritten" / "kept" / "open"
        self.opens: list[tuple[ast.Call, list[dict]]] = []
        self.drop_items: set[int] = set()  # id(with item) of an `open` whose file object is no longer read
        self.inline: dict[int, ast.expr] = {}  # id(open call) -> `io.StringIO(...)` / `io.BytesIO(...)`
        self.needs_io = False

    def loader_calls(self, tree: ast.Module, records: list[dict], folder: Path) -> None:
        """The loaders' calls, found by their spans: each that returned one value that can be written
        back, to be replaced by it; the `open` calls, for `open_calls`."""
        by_site: dict[tuple, list[dict]] = {}
        for rec in records:
            by_site.setdefault(tuple(rec["site"]), []).append(rec)
        calls = {_span(n): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for site, recs in sorted(by_site.items()):
            call = calls.get(site)
            for rec in recs:
                self.paths_read.setdefault(os.path.realpath(rec["path"]), set())
            if call is None:
                for rec in recs:
                    self.paths_read[os.path.realpath(rec["path"])].add("kept")
                continue
            if recs[0]["kind"] == "open":
                self.opens.append((call, recs))
                continue
            values = {json.dumps(r["value"], sort_keys=True) if r["value"] is not None else None for r in recs}
            same = len(values) == 1 and None not in values and \
                len({_array_bytes(folder, r["value"]) for r in recs}) == 1
            if not same:
                for rec in recs:
                    self.paths_read[os.path.realpath(rec["path"])].add("kept")
                continue
            self.replace[id(call)] = ast.parse(self.writer.expression(recs[0]["value"]), mode="eval").body
            self.replaced.add(id(self.replace[id(call)]))
            for rec in recs:
                self.paths_read[os.path.realpath(rec["path"])].add("rewritten")

    def open_calls(self, tree: ast.Module) -> None:
        """The `open` calls left in `tree` (the loaders' replaced): a `with` item whose file object is
        no longer read goes, a small file still read is inlined, any other is kept."""
        names_loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        live_calls = {id(n) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for call, recs in self.opens:
            if id(call) not in live_calls:
                continue  # inside a call written back
            paths = {os.path.realpath(r["path"]) for r in recs}
            item = _with_item_of(tree, call)
            if item is not None and isinstance(item.optional_vars, ast.Name) and \
                    item.optional_vars.id not in names_loaded:
                self.drop_items.add(id(item))
                continue
            text = _small_file(recs)
            if text is None:
                for p in paths:
                    self.paths_read[p].add("kept")
                continue
            self.needs_io = True
            stream = "BytesIO" if isinstance(text, bytes) else "StringIO"
            self.inline[id(call)] = ast.parse(f"io.{stream}({text!r})", mode="eval").body
            for p in paths:
                self.paths_read[p].add("rewritten")

    def add_header(self, tree: ast.Module, np_name: str, np_import: ast.stmt | None) -> None:
        """The imports the values written back need, and the line that loads repro_data.npz; the arrays
        kept for it are those the program still reads (not an .npz's others)."""
        writer = self.writer
        used = {n.slice.value for n in ast.walk(tree) if isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name) and n.value.id == DATA_NAME and isinstance(n.slice, ast.Constant)}
        writer.arrays = {k: v for k, v in writer.arrays.items() if k in used}
        header: list[ast.stmt] = []
        if self.needs_io:
            header.append(ast.parse("import io").body[0])
        if writer.uses_numpy and np_import is None:
            header.append(ast.parse(f"import numpy as {np_name}" if np_name != "numpy" else "import numpy").body[0])
        if writer.arrays:
            load = ast.parse(f"{DATA_NAME} = {np_name}.load({DATA_NPZ!r})").body[0]
            if np_import is not None:
                position = tree.body.index(np_import) + 1 if np_import in tree.body else 0
                tree.body.insert(position, load)
            else:
                header.append(load)
        at = _insert_at(tree)
        tree.body[at:at] = header


class _Replace(ast.NodeTransformer):
    """The loaders' calls replaced by what they returned."""

    def __init__(self, edit: _Edit):
        self.edit = edit

    def visit_Call(self, node):
        if id(node) in self.edit.replace:
            return ast.copy_location(self.edit.replace[id(node)], node)
        return self.generic_visit(node)


class _Inline(ast.NodeTransformer):
    """The `open` calls inlined or gone, and what a value written back makes of its surroundings."""

    def __init__(self, edit: _Edit):
        self.edit = edit

    def visit_Call(self, node):
        if id(node) in self.edit.inline:
            return ast.copy_location(self.edit.inline[id(node)], node)
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        # `{'x': np.array(...)}['x']` (an .npz file's array, read where it was loaded): the array itself
        replaced = self.edit.replaced
        if id(node.value) in replaced and isinstance(node.value, ast.Dict) and isinstance(node.slice, ast.Constant):
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(key, ast.Constant) and key.value == node.slice.value:
                    replaced.add(id(value))
                    return value
        return node

    def visit_With(self, node):
        self.generic_visit(node)
        # `with np.load(f) as d:` around a value written back: `d = {...}` (a dict is no context manager)
        replaced, drop_items = self.edit.replaced, self.edit.drop_items
        bound = [ast.Assign(targets=[i.optional_vars], value=i.context_expr) for i in node.items
                 if id(i.context_expr) in replaced and i.optional_vars is not None]
        node.items = [i for i in node.items if id(i) not in drop_items and id(i.context_expr) not in replaced]
        node.body = bound + node.body
        return node if node.items else node.body


def _hoist_from_checks(tree: ast.Module, replaced: set) -> None:
    """An `assert` that reads data written back reads it from a variable bound just before it: the
    check's line stays what it was (`assert x.sum() < 0`), as the program's own check, not a literal."""
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    count = [0]

    def fresh() -> str:
        while True:
            name = f"data{count[0] or ''}"
            count[0] += 1
            if name not in taken:
                taken.add(name)
                return name

    class Hoist(ast.NodeTransformer):
        def __init__(self):
            self.bound: list[ast.stmt] = []

        def visit(self, node):
            if id(node) in replaced and isinstance(node, ast.expr):
                name = fresh()
                self.bound.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=node))
                return ast.Name(name, ast.Load())
            return super().visit(node)

    for node in list(ast.walk(tree)):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            out = []
            for stmt in stmts:
                if isinstance(stmt, ast.Assert):
                    hoist = Hoist()
                    stmt = hoist.visit(stmt)
                    out.extend(hoist.bound)
                out.append(stmt)
            stmts[:] = out


def _array_bytes(folder: Path, desc) -> bytes:
    """The bytes of the arrays a description names (two runs through one call must read the same)."""
    if not isinstance(desc, dict):
        return b""
    out = b""
    if "array" in desc:
        out += (Path(folder) / f"{desc['array']}.npy").read_bytes()[128:]
    for key in ("dict", "list", "tuple"):
        for item in desc.get(key, ()):
            for part in (item if key == "dict" else [item]):
                out += _array_bytes(folder, part)
    return out


def _with_item_of(tree: ast.Module, call: ast.Call):
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.context_expr is call:
                    return item
    return None


def _small_file(recs: list[dict]):
    """The one file these `open` calls read, as text or bytes as they opened it, when it is small."""
    paths = {r["path"] for r in recs}
    modes = {r.get("mode", "r") for r in recs}
    if len(paths) != 1 or len(modes) != 1:
        return None
    try:
        data = Path(next(iter(paths))).read_bytes()
    except OSError:
        return None
    if len(data) > LITERAL_FILE_BYTES:
        return None
    if "b" in next(iter(modes)):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
