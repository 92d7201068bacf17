"""Writing a (reduced) jaxpr spec back as a readable, standalone Python script.

Each equation becomes one line of public API: an operator (`a + b`, `a @ b`), a `jax.lax` call
whose signature takes the primitive's parameters, or a special form (`lax.while_loop`, `lax.scan`,
`lax.switch`, `jax.jit`, `enzyme_jax_ir()`, `jnp.ones`, `jax.custom_jvp` / `jax.custom_vjp`
definitions). Only a primitive with no public call is bound directly (`name_p.bind(...)`, imported
from `jax._src`); `bind_all=True` binds every plain primitive so (the fallback when the public
spelling changes the failure). Inputs are `jnp.ones(shape, dtype)` or their recorded values (inline
when small, else from `inputs.npz`, returned alongside). The transformations are applied in order,
and the result printed. An equation recording the public call the program made (`src`) is written as
that call in its plain use (`jnp.fft.rfft(a)`, `jax.ops.segment_max(…)`: `public_calls`).
"""
from __future__ import annotations

import inspect
import string

import numpy as np

from reducer.levels.jaxpr import custom_rules, public_calls, spelling
from reducer.levels.jaxpr.primitives import registry
from reducer.levels.jaxpr.model import INEXACT, Equation, Jaxpr, Spec
from reducer.levels.jaxpr.params import decode_param, decode_params
from reducer.levels.jaxpr.program import argnums_source, batched_predicate, masked_loop, platform_branches

INFIX = {"add": "+", "sub": "-", "mul": "*", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
         "and": "&", "or": "|", "xor": "^"}
REDUCTIONS = {"reduce_sum": "jnp.sum", "reduce_max": "jnp.max", "reduce_min": "jnp.min", "reduce_prod": "jnp.prod",
              "reduce_and": "jnp.all", "reduce_or": "jnp.any"}
INLINE_VALUES = 16
NPZ = "inputs.npz"

_dtype = spelling.dtype_expr
REFS = ("closed", "jaxpr", "fn_of")  # parameters that name one of the equation's nested jaxprs


class Emitter:
    def __init__(self, bind_all: bool = False):
        self.bind_all = bind_all
        self.names: dict[str, str] = {}
        self.spelling = spelling.Spelling()
        self.imports = self.spelling.imports
        self.arrays: dict[str, np.ndarray] = {}
        self.funcs = 0

    # -- names and atoms ------------------------------------------------------------------------
    def name(self, var: str) -> str:
        if var not in self.names:
            n = len(self.names)
            letters = string.ascii_lowercase
            base = letters[n % 26] + (str(n // 26) if n >= 26 else "")
            if base in ("f", "g", "np", "jnp", "jax", "lax"):
                base += "_"
            self.names[var] = base
        return self.names[var]

    def atom(self, a) -> str:
        if isinstance(a, str):
            return self.name(a)
        return spelling.literal(a.value, a.dtype)

    def fun_name(self, kind: str) -> str:
        self.funcs += 1
        return f"{kind}{self.funcs}"

    # -- parameters -----------------------------------------------------------------------------
    def value(self, v) -> str:
        return self.spelling.value(v)

    # -- equations ------------------------------------------------------------------------------
    def eqn(self, e: Equation, indent: str) -> list[str]:
        words = None if self.bind_all else self.words.lines(self, e, indent)  # the public call the program made
        if words is not None:
            return words
        p, ins = e.primitive, [self.atom(a) for a in e.inputs]
        outs = [self.name(o.name) for o in e.outputs]
        listed = p in ("while", "scan", "cond", "jit", "enzyme", *custom_rules.KINDS) or (
            p in registry() and registry()[p][0].multiple_results) and not (
            p in spelling.CALLBACKS and not self.bind_all)  # jax.pure_callback returns one array as one
        lhs = ", ".join(outs) + ("," if len(outs) == 1 and listed else "")
        if p == "__fill__":
            o = e.outputs[0]
            return [f"{indent}{lhs} = {spelling.filled(o.shape, o.dtype, e.params.get('fill', 0))}"]
        if p == "__const__":
            o = e.outputs[0]
            return [f"{indent}{lhs} = {self.array_expr(o.name, o.shape, o.dtype, e.params['values'])}"]
        if p in ("while", "scan", "cond", "jit", "enzyme"):
            return self.structured(e, ins, lhs, indent)
        if p in custom_rules.KINDS:
            return custom_rules.emit_lines(self, e, ins, lhs, indent)
        if any(isinstance(v, dict) and set(REFS) & set(v) for v in e.params.values()):
            return self.with_jaxprs(e, ins, lhs, indent)
        return [f"{indent}{lhs + ' = ' if outs else ''}{self.call(p, ins, decode_params(e.params), e)}"]

    def with_jaxprs(self, e: Equation, ins: list[str], lhs: str, indent: str) -> list[str]:
        """A primitive with jaxpr parameters (scatter's `update_jaxpr`, `reduce`'s `jaxpr` …): its public
        call when one takes the other parameters (JAX derives the jaxpr again), else bound with
        each jaxpr traced from a function written for it."""
        plain = {k: v for k, v in e.params.items() if not (isinstance(v, dict) and set(REFS) & set(v))}
        params = {k: decode_param(v) for k, v in plain.items() if v != {"t": []}}
        if not self.bind_all:
            public = self.public(e.primitive, ins, params, e)
            if public:
                return [f"{indent}{lhs} = {public}"]
        lines, funs = [], []
        for sub in e.subs:
            fn = self.fun_name("computation")
            lines += self.function(fn, sub, [self.name(v.name) for v in sub.inputs], indent, True)
            funs.append((fn, sub))
        spelled = {k: self.value(decode_param(v)) for k, v in plain.items()}
        for k, v in e.params.items():
            if k in plain:
                continue
            ref = next(r for r in REFS if r in v)
            fn, sub = funs[v[ref]]
            avals = ", ".join(f"jax.ShapeDtypeStruct({tuple(x.shape)!r}, {_dtype(x.dtype)})" for x in sub.inputs)
            spelled[k] = fn if ref == "fn_of" else f"jax.make_jaxpr({fn})({avals})" + ".jaxpr" * (ref == "jaxpr")
        lines.append(f"{indent}{lhs} = {self.bound(e.primitive, ins, spelled)}")
        return lines

    def bound(self, p: str, ins: list[str], spelled: dict) -> str:
        _, where = registry()[p]
        module, attr = where.split(":")
        self.imports.add(f"from {module} import {attr}")
        return f"{attr}.bind({', '.join(ins + [f'{k}={v}' for k, v in spelled.items()])})"

    def call(self, p: str, ins: list[str], params: dict, e: Equation) -> str:
        if not self.bind_all:
            public = self.public(p, ins, params, e)
            if public:
                return public
        return self.bound(p, ins, {k: self.value(v) for k, v in params.items()})

    def public(self, p: str, ins: list[str], params: dict, e: Equation) -> str:
        """The primitive as an operator or a public call taking its parameters ("" when none does)."""
        from jax import lax

        users = self.users_call(p, ins, params, e)
        if users:
            return users
        if p in INFIX and len(ins) == 2:
            return f"{ins[0]} {INFIX[p]} {ins[1]}"
        if p == "neg":
            return f"-{ins[0]}"
        if p == "div" and e.outputs[0].dtype.startswith(INEXACT):
            return f"{ins[0]} / {ins[1]}"
        if p == "dot_general" and params["dimension_numbers"] == (((1,), (0,)), ((), ())) and \
                all(len(s) == 2 for s in self._in_shapes(e)) and params.get("precision") is None:
            return f"{ins[0]} @ {ins[1]}"
        if p in REDUCTIONS and len(ins) == 1:
            axes = tuple(params["axes"])
            rank = len(self._in_shapes(e)[0])
            if axes == tuple(range(rank)):
                return f"{REDUCTIONS[p]}({ins[0]})"
            return f"{REDUCTIONS[p]}({ins[0]}, axis={axes[0] if len(axes) == 1 else axes})"
        if p == "concatenate":
            return f"lax.concatenate([{', '.join(ins)}], {params['dimension']})"
        if p == "platform_index":
            return spelling.platform_index(params["platforms"])
        if p == "sort":  # operands as a tuple: lax.sort then returns a tuple, as the primitive's results are listed
            return (f"lax.sort(({', '.join(ins)},), dimension={params['dimension']}, "
                    f"is_stable={params['is_stable']}, num_keys={params['num_keys']})")
        if p == "dynamic_update_slice":  # its start indices are operands of the primitive, a sequence of the call
            return f"lax.dynamic_update_slice({ins[0]}, {ins[1]}, ({', '.join(ins[2:])},))"
        if p == "dynamic_slice":
            return f"lax.dynamic_slice({ins[0]}, ({', '.join(ins[1:])},), {self.value(tuple(params['slice_sizes']))})"
        if p == "convert_element_type":
            return f"lax.convert_element_type({ins[0]}, {self.value(params['new_dtype'])})"
        if p == "iota":
            return (f"lax.broadcasted_iota({self.value(params['dtype'])}, {self.value(tuple(params['shape']))}, "
                    f"{params['dimension']})")
        name = p.replace("-", "_")  # scatter-add: lax.scatter_add
        for space, fn in (("lax", getattr(lax, name, None)), ("lax.linalg", getattr(lax.linalg, name, None))):
            if not callable(fn):
                continue
            kept = {k: v for k, v in params.items() if v is not None}
            try:
                inspect.signature(fn).bind(*ins, **kept)
            except (TypeError, ValueError):
                continue
            args = ins + [f"{k}={self.value(v)}" for k, v in kept.items()]
            return f"{space}.{name}({', '.join(args)})"
        return self.spelling.callback_call(p, ins, params) if p in spelling.CALLBACKS else \
            spelling.random_call(p, ins, params)

    def users_call(self, p: str, ins: list[str], params: dict, e: Equation) -> str:
        """The primitive as the jax.numpy call a user writes for it, where that stages it unchanged."""
        kinds = [self.types.get(a, "") if isinstance(a, str) else a.dtype for a in e.inputs]
        alike = spelling.alike(p, self._in_shapes(e), [isinstance(a, str) for a in e.inputs])
        return spelling.users_call(p, ins, params, e.outputs[0].dtype, kinds, alike) if e.outputs else ""

    def typed(self, v) -> None:
        """Record the shape and dtype of the variable `v` (a `reducer.levels.jaxpr.model.Var`)."""
        self.shapes[v.name], self.types[v.name] = v.shape, v.dtype

    def _in_shapes(self, e: Equation) -> list:
        return [self.shapes.get(a, ()) if isinstance(a, str) else () for a in e.inputs]

    def array_expr(self, var: str, shape, dtype: str, values) -> str:
        from reducer.levels.jaxpr.params import array_of, key_impl

        if not tuple(shape) and len(values) == 1 and key_impl(dtype) is None and not dtype.startswith("complex"):
            return f"{_dtype(dtype)}({spelling.number(values[0])})"  # one number, as users write it
        if len(values) <= INLINE_VALUES * (2 if dtype.startswith("complex") else 1):
            return spelling.array(values, shape, dtype)
        key = self.name(var)
        impl = key_impl(dtype)
        arr = array_of(values, shape, dtype if dtype != "bfloat16" else "float32")
        self.arrays[key] = arr
        if impl is not None:
            return f"jax.random.wrap_key_data(jnp.asarray(INPUTS[{key!r}]), impl={impl.name!r})"
        return f"jnp.asarray(INPUTS[{key!r}], {_dtype(dtype)})"

    # -- nested jaxprs --------------------------------------------------------------------------
    def function(self, fname: str, j: Jaxpr, params: list[str], indent: str, tuple_out: bool,
                 bound: dict | None = None) -> list[str]:
        """`def fname(params): …` for the jaxpr `j`; `bound` pre-assigns some of its inputs."""
        lines = [f"{indent}def {fname}({', '.join(params)}):"]
        inner = indent + "    "
        used = j.uses()
        for var, expr in (bound or {}).items():
            if var in used:
                lines.append(f"{inner}{self.name(var)} = {expr}")
        for v in j.inputs:
            self.typed(v)
        body = self.body(j, inner)
        lines += body
        outs = [self.atom(a) for a in j.outputs]
        ret = ", ".join(outs) + ("," if len(outs) == 1 and tuple_out else "")
        lines.append(f"{inner}return {ret if outs else '()'}")
        return lines

    def body(self, j: Jaxpr, indent: str) -> list[str]:
        lines = []
        for e in j.eqns:
            lines += self.eqn(e, indent)
            for o in e.outputs:
                self.typed(o)
        return lines

    def structured(self, e: Equation, ins: list[str], lhs: str, indent: str) -> list[str]:
        p, subs, params = e.primitive, e.subs, e.params
        if p == "while":
            nc, nb = params["cond_nconsts"], params["body_nconsts"]
            cond, body = subs
            carry = ins[nc + nb:]
            cn, bn = self.fun_name("cond"), self.fun_name("body")
            alone = len(carry) == 1 and not (batched_predicate(cond) and masked_loop(e))  # not a 1-tuple
            lines = self._carry_fun(cn, cond, ins[:nc], indent, False, alone)
            lines += self._carry_fun(bn, body, ins[nc:nc + nb], indent, not alone, alone)
            init = carry[0] if alone else f"({', '.join(carry)}{',' if len(carry) == 1 else ''})"
            lhs = lhs.rstrip(",") if alone else lhs
            if not batched_predicate(cond):
                lines.append(f"{indent}{lhs} = lax.while_loop({cn}, {bn}, {init})")
                return lines
            if not masked_loop(e):  # every lane steps while any goes on
                lines.append(f"{indent}{lhs} = lax.while_loop(lambda carry: jnp.any({cn}(carry)), {bn}, {init})")
                return lines
            # one predicate per lane (a vmapped loop): go on while any lane does, update only those
            mn = self.fun_name("masked")
            inner = indent + "    "
            lines += [f"{indent}def {mn}(carry):", f"{inner}p = {cn}(carry)",
                      f"{inner}return tuple(jnp.where(p.reshape(p.shape + (1,) * (jnp.ndim(n) - p.ndim)), n, o) "
                      f"for n, o in zip({bn}(carry), carry))",
                      f"{indent}{lhs} = lax.while_loop(lambda carry: jnp.any({cn}(carry)), {mn}, {init})"]
            return lines
        if p == "scan":
            return self._scan(e, ins, indent)
        if p == "cond":
            names, lines = [], []
            for s in subs:
                names.append(self.fun_name("branch"))
                lines += self.function(names[-1], s, [self.name(v.name) for v in s.inputs], indent, True)
            if params.get("branches_platforms"):  # one branch lowered, the platform's
                chosen = [f"{k}={v}" for k, v in platform_branches(e, names).items()]
                return lines + [f"{indent}{lhs} = lax.platform_dependent({', '.join(ins[1:] + chosen)})"]
            return lines + [f"{indent}{lhs} = lax.switch({ins[0]}, [{', '.join(names)}], {', '.join(ins[1:])})"]
        if p == "jit" and not self.bind_all and (call := public_calls.jit_call(e, ins)):
            return [f"{indent}{lhs.rstrip(',')} = {call}"]
        kind = "inner" if p == "jit" else "enzyme_fun"
        fn = self.fun_name(kind)
        one = len(subs[0].outputs) == 1  # one result is returned as itself, as users write it
        lines = self.function(fn, subs[0], [self.name(v.name) for v in subs[0].inputs], indent, not one)
        wrap = "jax.jit" if p == "jit" else spelling.enzyme_wrapper(params.get("options"), self.imports)
        lines.append(f"{indent}{lhs.rstrip(',') if one else lhs} = {wrap}({fn})({', '.join(ins)})")
        return lines

    def _scan(self, e: Equation, ins: list[str], indent: str) -> list[str]:
        """`lax.scan` of a step function written for the body of the `scan` equation `e`."""
        params = e.params
        nc, nk = params["num_consts"], params["num_carry"]
        body = e.subs[0]
        sn = self.fun_name("step")
        bound = {v.name: a for v, a in zip(body.inputs[:nc], ins[:nc])}
        carry = [self.name(v.name) for v in body.inputs[nc:nc + nk]]
        xs = [self.name(v.name) for v in body.inputs[nc + nk:]]
        for v in body.inputs:
            self.typed(v)
        lines = [f"{indent}def {sn}(carry, x_slice):"]
        inner = indent + "    "
        lines += [f"{inner}{self.name(var)} = {expr}" for var, expr in bound.items() if var in body.uses()]
        if carry:
            lines.append(f"{inner}{', '.join(carry)}, = carry")
        if xs:
            lines.append(f"{inner}{', '.join(xs)}, = x_slice")
        lines += self.body(body, inner)
        outs = [self.atom(a) for a in body.outputs]
        c, y = outs[:nk], outs[nk:]
        lines.append(f"{inner}return ({', '.join(c)}{',' if len(c) == 1 else ''}), "
                     f"({', '.join(y)}{',' if len(y) == 1 else ''})")
        n_out = len(e.outputs)
        cs = ", ".join(self.name(o.name) for o in e.outputs[:nk])
        ys = ", ".join(self.name(o.name) for o in e.outputs[nk:])
        lhs2 = f"({cs}{',' if nk == 1 else ''}), ({ys}{',' if n_out - nk == 1 else ''})"
        lines.append(f"{indent}{lhs2} = lax.scan({sn}, ({', '.join(ins[nc:nc + nk])}{',' if nk == 1 else ''}), "
                     f"({', '.join(ins[nc + nk:])}{',' if len(ins) - nc - nk == 1 else ''}), "
                     f"length={params['length']}, reverse={params['reverse']})")
        return lines

    def _carry_fun(self, fname: str, j: Jaxpr, consts: list[str], indent: str, tuple_out: bool,
                   alone: bool = False) -> list[str]:
        """A loop's `cond` or `body` function of the carry (`alone`: the one value carried, itself)."""
        n = len(consts)
        bound = {v.name: c for v, c in zip(j.inputs[:n], consts)}
        carry = [self.name(v.name) for v in j.inputs[n:]]
        for v in j.inputs:
            self.typed(v)
        lines = [f"{indent}def {fname}({carry[0] if alone else 'carry'}):"]
        inner = indent + "    "
        used = j.uses()
        lines += [f"{inner}{self.name(var)} = {expr}" for var, expr in bound.items() if var in used]
        if not alone and any(v.name in used for v in j.inputs[n:]):
            lines.append(f"{inner}{', '.join(carry)}, = carry")
        lines += self.body(j, inner)
        outs = [self.atom(a) for a in j.outputs]
        ret = ", ".join(outs) + ("," if len(outs) == 1 and tuple_out else "")
        lines.append(f"{inner}return {ret}")
        return lines

    # -- the script -----------------------------------------------------------------------------
    def script(self, spec: Spec, header: str = "") -> str:
        self.shapes: dict = {}
        self.types: dict = {}
        self.words = public_calls.Words(spec)
        j = spec.jaxpr
        params = [self.name(v.name) for v in j.inputs]
        fn = self.function("f", j, params, "", False)
        inputs = []
        for v, a in zip(j.inputs, spec.args):
            if a.values is not None:
                inputs.append(f"{self.name(v.name)} = {self.array_expr(v.name, a.shape, a.dtype, a.values)}")
            else:
                inputs.append(f"{self.name(v.name)} = {spelling.filled(a.shape, a.dtype, 1)}")
        uses_enzyme = "enzyme" in spec.kinds() or any(
            e.primitive == "enzyme" for _, sub in j.walk() for e in sub.eqns)
        chain, current = self.transformed(spec.transforms)
        head = ["import jax", "import jax.numpy as jnp", "from jax import lax"]
        if self.arrays:
            head.append("import numpy as np")
        if uses_enzyme:
            head.append("from enzyme_ad.jax import enzyme_jax_ir")
        head += sorted(self.imports - set(head))
        if spec.x64:
            head += ["", 'jax.config.update("jax_enable_x64", True)']
        if self.arrays:
            head += ["", f"INPUTS = np.load({NPZ!r})"]
        call = f"print({current}({', '.join(params)}))"
        parts = [header.rstrip("\n")] if header else []
        parts += ["\n".join(head), "\n".join(fn), "\n".join(inputs + chain + [call])]
        return "\n\n\n".join(p for p in parts if p) + "\n"

    def transformed(self, transforms: list) -> tuple[list[str], str]:
        """The helper functions applying `transforms` to `f` needs (for vjp / jvp), and the
        expression of the transformed function: nested calls, as users write them (jax.jit(jax.grad(f)))."""
        chain, current = [], "f"
        for k, t in enumerate(reversed(transforms)):
            kind = t.kind
            if kind == "jit":
                current = f"jax.jit({current})"
            elif kind == "enzyme":
                current = f"{spelling.enzyme_wrapper(t.options, self.imports)}({current})"
            elif kind == "vmap":
                current = f"jax.vmap({current}, in_axes={tuple(t.in_axes)!r})"
            elif kind == "vjp":
                chain.append(f"def fn{k}(*xs):\n    out, pullback = jax.vjp({current}, *xs)\n"
                             f"    return pullback(jax.tree_util.tree_map(jnp.ones_like, out))\n")
                current = f"fn{k}"
            elif kind == "jvp":
                chain.append(f"def fn{k}(*xs):\n"
                             f"    return jax.jvp({current}, xs, tuple(jnp.ones_like(x) for x in xs))\n")
                current = f"fn{k}"
            else:
                current = f"jax.{kind}({current}, argnums={argnums_source(t.argnums)})"
        return chain, current


def emit(spec: Spec, header: str = "", bind_all: bool = False) -> tuple[str, dict]:
    """The script for `spec` and the arrays it reads from `inputs.npz` (empty when none)."""
    e = Emitter(bind_all)
    return e.script(spec, header), e.arrays
