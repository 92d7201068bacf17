"""What the capture needs to see through neural-network libraries' own transformations.

Flax linen, Optax and Equinox transform with JAX's own `jax.jit` / `jax.grad` … (Equinox's
`filter_jit` passes the user's function as a static argument), so the capture's patches of `jax`
see them. Flax NNX transforms graph nodes (modules holding `Variable`s) through a context that
lives only while its transformed call runs: re-tracing NNX's inner function after a failure finds
the context gone. So `nnx.jit`, `nnx.grad` and `nnx.value_and_grad` are patched too, as soon as
the script imports `flax.nnx`, and a call's graph-node arguments are replaced by their
`nnx.split` state (a pytree of arrays) with the function merging them back (`as_pytrees`).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys

NNX_TRANSFORMS = {"jit": "jit", "grad": "grad", "value_and_grad": "value_and_grad"}


def as_pytrees(fun, args: tuple):
    """`fun` and `args` with every Flax NNX graph node among the arguments replaced by its state."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None or not any(nnx.graph.is_graph_node(a) for a in args):
        return fun, args
    graphs, states = [], []
    for a in args:
        if nnx.graph.is_graph_node(a):
            graph, state = nnx.split(a)
            graphs.append(graph)
            states.append(state)
        else:
            graphs.append(None)
            states.append(a)

    def merged(*xs, **kwargs):
        return fun(*[x if g is None else nnx.merge(g, x) for g, x in zip(graphs, xs)], **kwargs)

    return merged, tuple(states)


def _plain(value) -> bool:
    """An option the capture reads as JAX's own: an int, a bool or a sequence of ints (not NNX's `DiffState`)."""
    return (isinstance(value, (int, bool))
            or (isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value)))


def patch_nnx(nnx, transformed) -> None:
    """Replace NNX's transformations by recording ones; `transformed(kind, fun, opts, real)` makes one."""
    for name, kind in NNX_TRANSFORMS.items():
        orig = getattr(nnx, name)

        def transform(f=None, *, _orig=orig, _kind=kind, **kw):
            if f is None:  # used as @nnx.jit(...) with options only
                return lambda g: transform(g, **kw)
            opts = {k: v for k, v in kw.items() if k in ("argnums", "has_aux", "static_argnums") and _plain(v)}
            return transformed(_kind, f, opts, _orig(f, **kw))

        setattr(nnx, name, transform)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after `name` is imported (before the script uses it)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module, then = spec.loader.exec_module, self.then

        def run(module):
            exec_module(module)
            then(module)

        spec.loader.exec_module = run
        return spec


def install(transformed) -> None:
    """Patch Flax NNX's transformations when (or if already) imported."""
    if "flax.nnx" in sys.modules:
        patch_nnx(sys.modules["flax.nnx"], transformed)
    else:
        sys.meta_path.insert(0, _AfterImport("flax.nnx", lambda module: patch_nnx(module, transformed)))
