"""Every primitive of JAX and Enzyme-JAX by its name, with where it is defined: what a spec equation's
primitive name binds to when it runs, and how a written-back script spells it."""
from __future__ import annotations

import importlib
import sys

_REGISTRY: dict | None = None


def registry() -> dict:
    """name -> (Primitive, "module:attribute") for every primitive found in jax and enzyme_ad."""
    global _REGISTRY
    if _REGISTRY is not None:
        return _REGISTRY
    import jax  # noqa: F401
    from jax._src import core

    for name in ("jax._src.lax.lax", "jax._src.lax.control_flow", "jax._src.lax.slicing", "jax._src.lax.linalg",
                 "jax._src.lax.special", "jax._src.lax.fft", "jax._src.lax.convolution", "jax._src.lax.parallel",
                 "jax._src.lax.windowed_reductions", "jax._src.prng", "jax._src.ad_util",
                 "jax._src.lax.ann", "jax._src.lax.other", "enzyme_ad.jax.primitives"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    found: dict = {}
    rank: dict = {}
    for modname, mod in sorted(list(sys.modules.items())):
        if mod is None or not (modname.startswith("jax._src") or modname.startswith("enzyme_ad")):
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, core.Primitive):
                # the canonical spelling first: `name_p`, then any `…_p`, then a public attribute
                r = (attr == f"{value.name}_p", attr.endswith("_p"), not attr.startswith("_"))
                if value.name not in found or r > rank[value.name]:
                    found[value.name], rank[value.name] = (value, f"{modname}:{attr}"), r
    _REGISTRY = found
    return found
