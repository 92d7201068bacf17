"""The public library call a program made (`src`, recorded on its equations while they are encoded:
`reducer.levels.jaxpr.call_records`), written back in those words.

`Words`: an equation whose `src` is handled and whose primitive and parameters are
that function's plain use is spelled as the call (`jnp.fft.rfft(a)`, `jax.ops.segment_max(a, b,
num_segments=4)`); the values the call builds itself (a segment reduction's identity-filled operand,
its segment ids as a column) are then left out when nothing else reads them. Anything else keeps
the spelling of `reducer.levels.jaxpr.as_script`.
"""
from __future__ import annotations

import math
from collections import Counter

from reducer.levels.jaxpr import spelling
from reducer.levels.jaxpr.model import Equation, Jaxpr, Literal, Spec
from reducer.levels.jaxpr.params import decode_param

FFT_TYPES = {"fft": "FFT", "ifft": "IFFT", "rfft": "RFFT", "irfft": "IRFFT"}
SEGMENTS = {"scatter-add": "segment_sum", "scatter-max": "segment_max", "scatter-min": "segment_min",
            "scatter-mul": "segment_prod"}
COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}



# -- writing back ---------------------------------------------------------------------------------
#: where a jitted function's name is looked for, as a script spells the namespace
NAMED = (("jnp", "jax.numpy"), ("jnp.linalg", "jax.numpy.linalg"), ("jax.nn", "jax.nn"),
         ("jax.scipy.special", "jax.scipy.special"))


def jit_call(e: Equation, ins: list[str]) -> str:
    """An inner `jit` written as the public call that stages it: one `spelling.public_jit` knows
    (`jnp.cumprod(x, axis=1)`, `jnp.where`), or a public function of the `jit`'s name (`named_call`:
    `jnp.sinc`, `jnp.linalg.norm`) whose own trace on the same inputs, with its defaults, stages the
    same equations; "" for any other (a body a pass has edited is not the call any more)."""
    return spelling.public_jit(e, ins) or named_call(e, ins)


def function_name(e: Equation) -> str | None:
    """The name of the function a `jit` equation calls, where it may be a public one (not a private
    helper of jax.numpy's, `_where`, nor a lambda); None for any other equation."""
    name = e.params.get("name") if e.primitive == "jit" else None
    return name if isinstance(name, str) and name.isidentifier() and not name.startswith("_") else None


def named_call(e: Equation, ins: list[str]) -> str:
    """A `jit` of a public function's name that stages what that function does with its defaults,
    as that call (`jnp.sinc(a)`); "" for any other."""
    import importlib

    name = function_name(e)
    if name is None:
        return ""
    for spelled, module in NAMED:
        fun = getattr(importlib.import_module(module), name, None)
        if callable(fun) and _stages(fun, e):
            return f"{spelled}.{name}({', '.join(ins)})"
    return ""


def _stages(fun, e: Equation) -> bool:
    """Whether `fun`, traced on the inputs of the `jit` equation `e` and encoded as the capture
    encodes a program, stages the same `jit` body: the same equations, literals and parameters."""
    import jax

    from reducer.levels.jaxpr.codec import Encoder

    body = e.subs[0]
    try:
        staged = Encoder().closed_jaxpr(jax.make_jaxpr(fun)(*(jax.ShapeDtypeStruct(v.shape, v.dtype)
                                                               for v in body.inputs))).eqns
    except Exception:  # another signature, or a dtype it does not take
        return False
    return len(staged) == 1 and staged[0].params == e.params and _structure(staged[0].subs[0]) == _structure(body)


def _structure(j: Jaxpr) -> list:
    """A jaxpr's equations as (primitive, literal operands, parameters, results' shapes and dtypes),
    nested ones inline: what is left when the variables' names are not looked at."""
    found = []
    for q in j.eqns:
        found.append((q.primitive, [v.to_data() for v in q.inputs if isinstance(v, Literal)], q.params,
                      [(tuple(o.shape), o.dtype) for o in q.outputs]))
        for sub in q.subs:
            found += _structure(sub)
    return found


def fft_call(src: str, fft_type: str, lengths, shape, dtype: str) -> str:
    """`jnp.fft.rfft({})`-like template for an `fft` of the input (shape, dtype) when it is the plain
    use of `src`; "" when not."""
    space, _, name = src.rpartition(".")
    if space != "jnp.fft":
        return ""
    kind, dims = name.rstrip("2n"), name[len(name.rstrip("2n")):]
    k, shape = len(lengths), tuple(shape)
    if FFT_TYPES.get(kind) != fft_type or k > len(shape) or k > 3 or (dims == "" and k != 1) or \
            (dims == "2" and k != 2):
        return ""
    if (kind == "rfft") != (dtype in COMPLEX_OF) or (kind != "rfft" and not dtype.startswith("complex")):
        return ""
    args = ["{}"]
    if dims == "n" and k != len(shape):
        args.append(f"axes={tuple(range(-k, 0))!r}")
    if kind != "irfft":
        return f"{src}({', '.join(args)})" if tuple(lengths) == shape[-k:] else ""
    if tuple(lengths[:-1]) != shape[-k:-1] or lengths[-1] // 2 + 1 != shape[-1]:
        return ""
    if lengths[-1] != 2 * (shape[-1] - 1):
        args.append(f"n={lengths[-1]}" if k == 1 else f"s={tuple(lengths)!r}")
    return f"{src}({', '.join(args)})"


def _fft_of(e: Equation, shape, dtype: str, src: str | None = None) -> str:
    """The template for the `fft` equation `e` of an input (shape, dtype) as the public call `src`
    (by default the one `e` records)."""
    lengths = [int(n) for n in decode_param(e.params["fft_lengths"])]
    return fft_call(src or e.src or "", decode_param(e.params["fft_type"]).name, lengths, shape, dtype)


def _jit_fft(e: Equation) -> str:
    """The template for a `jit` that is what a `jnp.fft` function stages: its `fft`, after the
    conversion of a real input to complex that `jnp.fft.fft` makes; "" for another."""
    body = e.subs[0]
    if len(body.inputs) != 1 or len(e.outputs) != 1 or not 1 <= len(body.eqns) <= 2:
        return ""
    *first, last = body.eqns
    source = body.inputs[0]
    if last.primitive != "fft" or body.outputs != [last.outputs[0].name]:
        return ""
    if first:
        c = first[0]
        if c.primitive != "convert_element_type" or c.inputs != [source.name] or \
                last.inputs != [c.outputs[0].name] or c.outputs[0].dtype != COMPLEX_OF.get(source.dtype):
            return ""
        call = _fft_of(last, source.shape, c.outputs[0].dtype, e.src)
        return call if call.startswith(("jnp.fft.fft", "jnp.fft.ifft")) else ""
    return _fft_of(last, source.shape, source.dtype, e.src) if last.inputs == [source.name] else ""


def _noop_pad(e: Equation) -> bool:
    """Whether a `jit` is a pad by nothing (what `jnp.fft.irfft(x, n)` stages when `x` has its size)."""
    body = e.subs[0]
    if len(e.outputs) != 1 or not isinstance(e.inputs[0], str) or not body.eqns:
        return False
    pad = body.eqns[-1]
    if pad.inputs[0] != body.inputs[0].name or body.outputs != [pad.outputs[0].name] or not _pads_nothing(pad):
        return False
    return all(x.primitive == "convert_element_type" for x in body.eqns[:-1])


def _pads_nothing(pad: Equation) -> bool:
    """Whether a `pad` equation returns its operand as it is (no padding on any side)."""
    if pad.primitive != "pad" or not isinstance(pad.inputs[0], str):
        return False
    config = decode_param(pad.params["padding_config"])
    return not any(int(x) for dim in config for x in dim)


def identity(op: str, value, dtype: str) -> bool:
    """Whether `value` is the identity a `jax.ops` segment reduction fills its result with."""
    import numpy as np

    if op in ("segment_sum", "segment_prod"):
        return value == (0 if op == "segment_sum" else 1) and not isinstance(value, list)
    if dtype == "bool":
        return value is (op == "segment_min")
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return value == (info.max if op == "segment_min" else info.min)
    return isinstance(value, float) and math.isinf(value) and (value > 0) == (op == "segment_min")


class Words:
    """The plan for one spec: which equations are spelled as their public call, and how."""

    def __init__(self, spec: Spec):
        self.calls: dict[int, tuple] = {}  # id(eqn) -> (template, the atoms it reads)
        self.aliases: dict[int, object] = {}  # id(eqn) -> the atom its one result equals
        self.skipped: set[int] = set()
        for _, j in spec.jaxpr.walk():  # every jaxpr, the nested ones too
            self._plan(j)

    def _plan(self, j: Jaxpr) -> None:
        info = j.variables()
        made = {o.name: e for e in j.eqns for o in e.outputs}
        uses = Counter(a for e in j.eqns for a in e.inputs if isinstance(a, str))
        uses.update(a for a in j.outputs if isinstance(a, str))
        for e in j.eqns:
            if e.src is not None:
                try:
                    self._plan_one(e, info, made, uses)
                except (KeyError, IndexError, TypeError, ValueError, AttributeError):
                    pass  # not the shape of the call's plain use: today's spelling

    def _plan_one(self, e: Equation, info: dict, made: dict, uses: Counter) -> None:
        """Plan `e`, which records a public call, when it is that call's plain use."""
        if e.primitive == "fft" and isinstance(e.inputs[0], str):
            call = _fft_of(e, *info[e.inputs[0]].aval())
            if call:
                self.calls[id(e)] = (call, e.inputs[:1])
        elif e.primitive == "jit" and _jit_fft(e):
            self.calls[id(e)] = (_jit_fft(e), e.inputs[:1])
        elif e.src.startswith("jnp.fft.irfft") and (_noop_pad(e) if e.primitive == "jit" else _pads_nothing(e)):
            self.aliases[id(e)] = e.inputs[0]  # a pad by nothing (the jit of one, when not inlined)
            value = made.get(e.inputs[-1]) if e.primitive == "pad" else None
            if value is not None and value.primitive == "convert_element_type" and uses[e.inputs[-1]] == 1:
                self.skipped.add(id(value))  # the padding value, read by nothing else
        elif e.primitive in SEGMENTS:
            self._segment(e, info, made, uses)

    def _segment(self, e: Equation, info: dict, made: dict, uses: Counter) -> None:
        """A scatter that is `jax.ops.segment_…(data, ids, num_segments)`: its operand filled with the
        reduction's identity, its indices the ids as a column, its updates the data, row by row."""
        op = SEGMENTS[e.primitive]
        if e.src != f"jax.ops.{op}" or len(e.inputs) != 3 or not all(isinstance(a, str) for a in e.inputs):
            return
        operand, indices, data = (info[a] for a in e.inputs)
        p = {k: decode_param(v) for k, v in e.params.items() if k not in ("update_jaxpr", "update_consts")}
        dn = p["dimension_numbers"]
        rank = len(data.shape)
        if (dn.update_window_dims, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims) != (
                tuple(range(1, rank)), (0,), (0,)) or dn.operand_batching_dims or \
                dn.scatter_indices_batching_dims or p["mode"].name != "FILL_OR_DROP":
            return
        if rank < 1 or indices.shape != (data.shape[0], 1) or operand.shape[1:] != data.shape[1:] or \
                operand.dtype != data.dtype or not indices.dtype.startswith(("int", "uint")):
            return
        fill = made.get(operand.name)
        if fill is None or not _filled_with(fill, op, data.dtype):
            return
        ids = made.get(indices.name)
        column = ids is not None and ids.primitive == "broadcast_in_dim" and isinstance(ids.inputs[0], str) and \
            decode_param(ids.params["broadcast_dimensions"]) == (0,) and len(info[ids.inputs[0]].shape) == 1
        options = "".join(f", {k}=True" for k in ("indices_are_sorted", "unique_indices") if p.get(k))
        template = f"jax.ops.{op}({{}}, {{}}{'' if column else '[:, 0]'}, num_segments={operand.shape[0]}{options})"
        self.calls[id(e)] = (template, [e.inputs[2], ids.inputs[0] if column else e.inputs[1]])
        for producer, var, absorbed in ((fill, operand.name, True), (ids, indices.name, column)):
            if absorbed and uses[var] == 1 and len(producer.outputs) == 1:
                self.skipped.add(id(producer))

    def lines(self, emitter, e: Equation, indent: str) -> list[str] | None:
        """The lines of `e` in the user's words ([] when the call builds it), None when it has none."""
        key = id(e)
        if key in self.skipped:
            return []
        if key in self.aliases:
            emitter.names[e.outputs[0].name] = emitter.atom(self.aliases[key])
            return []
        if key not in self.calls:
            return None
        template, atoms = self.calls[key]
        return [f"{indent}{emitter.name(e.outputs[0].name)} = {template.format(*map(emitter.atom, atoms))}"]


def _filled_with(e: Equation, op: str, dtype: str) -> bool:
    """Whether the equation `e` makes an array of the identity of the segment reduction `op`."""
    if e.primitive == "broadcast_in_dim" and not isinstance(e.inputs[0], str):
        return identity(op, e.inputs[0].value, dtype)
    if e.primitive == "__fill__":
        return identity(op, e.params.get("fill", 0), dtype)
    return False
