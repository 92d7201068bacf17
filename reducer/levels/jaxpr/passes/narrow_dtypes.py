"""Narrow 64-bit types to 32-bit ones everywhere (float64, int64, uint64, complex128) and leave
64-bit mode, when the program was captured with `jax_enable_x64`."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass

NARROW = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}


def narrowed(value):
    if isinstance(value, str):
        return NARROW.get(value, value)
    if isinstance(value, list):
        return [narrowed(v) for v in value]
    if isinstance(value, dict):
        return {k: narrowed(v) for k, v in value.items()}
    return value


class NarrowDtypes(JaxprPass):
    name = "narrow-dtypes"

    def points(self, spec: Spec) -> list:
        return ["narrow"] if spec.x64 else []

    def apply(self, spec: Spec, point) -> str:
        new = narrowed(spec.to_data())  # every name in the spec's data: dtypes, and those in parameters
        del new["x64"]
        return jp.dumps(new)
