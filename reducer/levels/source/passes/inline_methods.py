"""Replace a call of a module (or any object of a class the script defines) by its computation.

`model(x)` for an Equinox or NNX module (or `self.head(x)`, `obj.method(x)`), and `model.apply(
variables, x)` for a Flax linen module, become the body of the class's `__call__` (or method) with
its parameters bound to the arguments and `self` to the object: a single `return e` replaces the
call by `e`, a longer body replaces the statement holding the call (as `inline-calls` does for
functions). Inside a linen `apply`, the parameters are the variables' `params`: `self.param("w",
…)` becomes `params["w"]`, an attribute made in `setup` by `self.param` the same, and a submodule
made in `setup`, `self.dense = nn.Dense(4)`, is applied to its own parameters,
`nn.Dense(4).apply({"params": params["dense"]}, …)`. Other `self.` attributes are read from the
object. The object's class is the one it was made from (`model = Model(…)`, `Model(…)(x)`, `self`
inside the class), or, for a module passed around as an argument, the only module class of the
script that has the method. The class stays (it may still be needed to build the object).
"""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t
from reducer.levels.source.passes.inline_calls import _body, _parameters, _splice

_NOT_PLAIN = {"staticmethod", "classmethod", "property"}


def _classes(tree: ast.AST) -> dict[str, ast.ClassDef]:
    found: dict[str, ast.ClassDef | None] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef):
            found[n.name] = None if n.name in found else n  # defined twice: leave alone
    return {k: v for k, v in found.items() if v is not None}


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    """A plain method `name` of `cls` whose first parameter is the object."""
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name and stmt.args.args \
                and not {getattr(d, "id", getattr(d, "attr", "")) for d in stmt.decorator_list} & _NOT_PLAIN:
            return stmt
    return None


def _is_module(cls: ast.ClassDef) -> bool:
    return any((getattr(b, "attr", None) or getattr(b, "id", "")).endswith("Module") for b in cls.bases)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
ARGUMENT = "<argument>"


def _scopes(tree: ast.AST) -> dict[int, ast.AST]:
    """The function (or the module) each node belongs to, by id."""
    scope: dict[int, ast.AST] = {}
    todo = [(tree, tree)]
    while todo:
        node, current = todo.pop()
        for child in ast.iter_child_nodes(node):
            scope[id(child)] = current
            todo.append((child, child if isinstance(child, _FUNCTIONS) else current))
    return scope


def _made_from(tree: ast.AST, scope: dict) -> dict[tuple[int, str], list]:
    """(scope, name) -> what each binding of the name in that scope binds it to: an expression,
    `ARGUMENT` for a parameter, None when it cannot be told (a loop variable, a starred target)."""
    seen: dict[tuple[int, str], list] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign | ast.AnnAssign | ast.For | ast.With | ast.AugAssign | ast.NamedExpr):
            targets = n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", n)]
            value = n.value if isinstance(n, ast.Assign | ast.AnnAssign) else None
            for target in targets:
                pairs = t.bindings(target, value) if value is not None else None
                if pairs is None:
                    pairs = [(x.id, None) for x in ast.walk(target) if isinstance(x, ast.Name)]
                for name, bound in pairs:
                    seen.setdefault((id(scope[id(n)]), name), []).append(bound)
        elif isinstance(n, ast.arg):
            seen.setdefault((id(scope[id(n)]), n.arg), []).append(ARGUMENT)
    return seen


class _Lookup:
    """Which class an object expression is of, in one tree."""

    def __init__(self, tree: ast.AST):
        self.classes = _classes(tree)
        self.scope = _scopes(tree)
        self.made = _made_from(tree, self.scope)
        self.calls = t.nodes(tree, ast.Call)
        inside = {id(n) for c in self.classes.values() for n in ast.walk(c)}
        self.made_outside = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
                             and isinstance(n.func, ast.Name) and n.func.id in self.classes and id(n) not in inside}
        self.enclosing: dict[int, tuple[ast.ClassDef, str]] = {}  # node -> its method's class, object name
        for c in self.classes.values():
            for m in c.body:
                if isinstance(m, ast.FunctionDef) and m.args.args:
                    for n in ast.walk(m):
                        self.enclosing.setdefault(id(n), (c, m.args.args[0].arg))

    def member_class(self, obj: ast.Attribute | ast.Subscript, depth: int) -> ast.ClassDef | None:
        """The class of `self.layer` or `self.layers[0]`, as made in `__init__` or `setup`."""
        index = None
        if isinstance(obj, ast.Subscript):
            if not (isinstance(obj.slice, ast.Constant) and type(obj.slice.value) is int):
                return None
            index, obj = obj.slice.value, obj.value
        if not (isinstance(obj, ast.Attribute) and isinstance(obj.value, ast.Name)):
            return None
        inside = self.enclosing.get(id(obj.value))
        if inside is None or inside[1] != obj.value.id:
            return None
        made = {**_made_in(inside[0], "__init__"), **_made_in(inside[0], "setup")}.get(obj.attr)
        if index is not None and isinstance(made, ast.ListComp | ast.GeneratorExp):
            made = made.elt  # `[Layer(k) for k in keys]`: every element is made alike
        elif index is not None:
            elements = made.elts if isinstance(made, ast.Tuple | ast.List) else []
            made = elements[index] if -len(elements) <= index < len(elements) else None
        return self.class_of(made, "", depth + 1) if isinstance(made, ast.Call) else None

    def passed(self, fn: ast.AST, name: str, depth: int) -> ast.ClassDef | None:
        """The class of what every direct call of the function `fn` passes as its parameter `name`."""
        if not isinstance(fn, ast.FunctionDef) or depth > 3:
            return None
        position = [a.arg for a in fn.args.args].index(name) if name in [a.arg for a in fn.args.args] else None
        found = set()
        for call in self.calls:
            if isinstance(call.func, ast.Name) and call.func.id == fn.name:
                given = [k.value for k in call.keywords if k.arg == name]
                if not given and position is not None and position < len(call.args):
                    given = [call.args[position]]
                found.add(self.class_of(given[0], "", depth + 1) if given else None)
        return found.pop() if len(found) == 1 else None

    def class_of(self, obj: ast.expr, method: str, depth: int = 0) -> ast.ClassDef | None:
        if isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name):
            return self.classes.get(obj.func.id)
        if isinstance(obj, ast.Attribute | ast.Subscript):
            return self.member_class(obj, depth)
        if not isinstance(obj, ast.Name):
            return None
        inside = self.enclosing.get(id(obj))
        if inside and inside[1] == obj.id:
            return inside[0]
        scope = self.scope.get(id(obj))
        while scope is not None and (id(scope), obj.id) not in self.made:
            scope = self.scope.get(id(scope))  # not bound here: the enclosing function's, the module's
        bound = self.made.get((id(scope), obj.id), []) if scope is not None else []
        if not bound or None in bound or depth > 3:
            return None
        if ARGUMENT not in bound:
            kinds = {self.class_of(value, "", depth + 1) for value in bound}
            return kinds.pop() if len(kinds) == 1 else None
        if bound != [ARGUMENT]:
            return None
        passed = self.passed(scope, obj.id, depth)
        if passed is not None:
            return passed
        having = [c for c in self.classes.values() if _is_module(c) and _method(c, method)]
        outer = [c for c in having if c.name in self.made_outside]
        return having[0] if len(having) == 1 else outer[0] if len(outer) == 1 else None


def _site(call: ast.Call, lookup: _Lookup) -> tuple | None:
    """(class, method, object, linen variables or None, arguments) for a call that can be inlined."""
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "apply" and call.args and not call.keywords:
        cls = lookup.class_of(f.value, "__call__")
        if cls is not None and _is_module(cls) and _method(cls, "apply") is None \
                and _method(cls, "__call__") is not None:
            return cls, _method(cls, "__call__"), f.value, call.args[0], call.args[1:]
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name | ast.Call):
        cls = lookup.class_of(f.value, f.attr)
        if cls is not None and _method(cls, f.attr) is not None:
            return cls, _method(cls, f.attr), f.value, None, call.args
    if isinstance(f, ast.Name | ast.Call | ast.Attribute | ast.Subscript):
        cls = lookup.class_of(f, "__call__")
        if cls is not None and _method(cls, "__call__") is not None:
            return cls, _method(cls, "__call__"), f, None, call.args
    return None


def _params_of(variables: ast.expr) -> ast.expr:
    """The `params` collection of linen variables: `{"params": p}` gives `p`."""
    if isinstance(variables, ast.Dict):
        for k, v in zip(variables.keys, variables.values):
            if isinstance(k, ast.Constant) and k.value == "params":
                return v
    return ast.Subscript(variables, ast.Constant("params"), ast.Load())


def _made_in(cls: ast.ClassDef, method: str) -> dict[str, ast.expr]:
    """What a method assigns to each attribute, once: `self.dense = nn.Dense(4)` gives dense."""
    setup, made = _method(cls, method), {}
    for stmt in ast.walk(setup) if setup else []:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute) \
                and isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == setup.args.args[0].arg:
            name = stmt.targets[0].attr
            made[name] = None if name in made else stmt.value
    return {k: v for k, v in made.items() if v is not None}


def _is_param_call(node: ast.AST, me: str) -> bool:
    """`self.param("name", ...)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "param" \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == me and node.args \
        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)


def _compact_submodule(node: ast.AST) -> bool:
    """`nn.Dense(4)` or `Block(8)` made and applied inline, as an `nn.compact` method does."""
    f = node.func if isinstance(node, ast.Call) else None
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name[:1].isupper()


class _BindSelf(ast.NodeTransformer):
    """The method body with the object `self` bound: to `obj`, or inside a linen `apply` to the
    parameters in `params` (None outside `apply`)."""

    def __init__(self, me: str, obj: ast.expr, variables: ast.expr | None, cls: ast.ClassDef):
        self.me, self.obj, self.variables, self.cls = me, obj, variables, cls
        self.params = _params_of(variables) if variables is not None else None
        self.setup = _made_in(cls, "setup")
        self.made_inline: dict[str, int] = {}  # compact submodules made so far, by class name

    def _param(self, name: str) -> ast.expr:
        return ast.Subscript(copy.deepcopy(self.params), ast.Constant(name), ast.Load())

    def _own(self, node: ast.AST) -> str | None:
        """The attribute name of `self.NAME`."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self.me:
            return node.attr
        return None

    def visit_Call(self, node):
        if self.params is not None and _is_param_call(node, self.me):
            return self._param(node.args[0].value)
        own = self._own(node.func)
        if self.params is not None and own and own not in self.setup and _method(self.cls, own) is not None:
            # another method of the module, bound to the same variables: `apply(..., method="name")`
            return ast.Call(ast.Attribute(copy.deepcopy(self.obj), "apply", ast.Load()),
                            [copy.deepcopy(self.variables)] + [self.visit(a) for a in node.args],
                            [self.visit(k) for k in node.keywords] + [ast.keyword("method", ast.Constant(own))])
        made = self.setup.get(own) if self.params is not None else None
        if self.params is not None and _compact_submodule(node.func):
            return self._applied(self.visit(node.func), self._compact_name(node.func), node)
        if isinstance(made, ast.Call) and not _is_param_call(made, self.me):
            return self._applied(self.visit(copy.deepcopy(made)), node.func.attr, node)
        return self.generic_visit(node)

    def _applied(self, module: ast.expr, name: str, call: ast.Call) -> ast.Call:
        """`module.apply({"params": params[name]}, …)` with `call`'s arguments."""
        variables = ast.Dict([ast.Constant("params")], [self._param(name)])
        return ast.Call(ast.Attribute(module, "apply", ast.Load()), [variables] + [self.visit(a) for a in call.args],
                        [self.visit(k) for k in call.keywords])

    def _compact_name(self, made: ast.Call) -> str:
        """The name linen gives a submodule made inline: its `name=`, else `Dense_0`, `Dense_1` … per class."""
        given = [k.value.value for k in made.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)]
        if given:
            return given[0]
        kind = made.func.attr if isinstance(made.func, ast.Attribute) else made.func.id
        self.made_inline[kind] = self.made_inline.get(kind, -1) + 1
        return f"{kind}_{self.made_inline[kind]}"

    def visit_Attribute(self, node):
        made = self.setup.get(self._own(node)) if self.params is not None else None
        if made is not None and _is_param_call(made, self.me) and isinstance(node.ctx, ast.Load):
            return self._param(made.args[0].value)
        return self.generic_visit(node)

    def visit_Name(self, node):
        return copy.deepcopy(self.obj) if node.id == self.me and isinstance(node.ctx, ast.Load) else node


def _as_function(fn: ast.FunctionDef, body: list[ast.stmt]) -> ast.FunctionDef:
    """The method as a plain function of its other parameters, with `body`."""
    a = fn.args
    args = ast.arguments(posonlyargs=[], args=a.args[1:], vararg=a.vararg, kwonlyargs=a.kwonlyargs,
                         kw_defaults=a.kw_defaults, kwarg=a.kwarg, defaults=a.defaults)
    return ast.FunctionDef(name=fn.name, args=args, body=body, decorator_list=[], lineno=0)


def _plan(tree: ast.AST, call: ast.Call, lookup: _Lookup, parents: dict) -> tuple | None:
    """The bound body, the parameters' values and how it replaces the call, or None."""
    site = _site(call, lookup)
    if site is None:
        return None
    cls, fn, obj, variables, args = site
    me = fn.args.args[0].arg
    if t.nodes(obj, ast.Call) and t.name_uses(ast.Module(_body(fn), []), me) > 1:
        return None  # the object would be made once per use
    binder = _BindSelf(me, obj, variables, cls)
    body = [binder.visit(copy.deepcopy(s)) for s in _body(fn)]
    plain = _as_function(fn, body)
    values = _parameters(plain, ast.Call(call.func, args, call.keywords))
    if values is None or not body:
        return None
    rebound = {n.id for n in ast.walk(obj) if isinstance(n, ast.Name)} & {
        k for k, v in values.items() if not (isinstance(v, ast.Name) and v.id == k)}
    if rebound:
        return None  # a parameter of the method would shadow a name the object is read through
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body, values, "expression", cls, fn
    shape = _splice_shape(body, call, parents.get(call))
    return (body, values, shape, cls, fn) if shape else None


def _own_returns(body: list[ast.stmt]) -> list[ast.Return]:
    """The `return` statements of this body, not of functions defined in it."""
    found, todo = [], list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo += list(ast.iter_child_nodes(node))
    return found


def _splice_shape(body: list[ast.stmt], call: ast.Call, parent: ast.AST | None) -> str | None:
    """How `body` replaces the statement holding `call`: "alone" (a statement `model(x)`),
    "assigned" (`y = model(x)`, the body's one `return e` at its end becoming `y = e`), or None."""
    returns = _own_returns(body)
    if isinstance(parent, ast.Expr) and parent.value is call:
        return None if any(r.value is not None for r in returns) else "alone"
    if isinstance(parent, ast.Assign) and parent.value is call and len(returns) == 1 \
            and returns[0] is body[-1] and body[-1].value is not None:
        return "assigned"
    return None


def _drop_if_unused(cls: ast.ClassDef, fn: ast.FunctionDef, tree: ast.AST) -> None:
    """Remove a named method nothing refers to any more (`__call__` and the like are called unseen)."""
    if fn.name.startswith("__") or any(isinstance(n, ast.Attribute) and n.attr == fn.name for n in ast.walk(tree)):
        return
    t.set_body(cls, "body", [s for s in cls.body if s is not fn])


def _inline(tree: ast.Module, call: ast.Call, plan: tuple) -> bool:
    done = _replace(tree, call, plan)
    if done:
        _drop_if_unused(plan[3], plan[4], tree)
    return done


def _replace(tree: ast.Module, call: ast.Call, plan: tuple) -> bool:
    body, values, shape = plan[:3]
    if shape == "expression":
        return t.replace_node(tree, call, t.substitute(body[0].value, values))
    parent = t.parents(tree)[call]
    binds = [ast.Assign(targets=[ast.Name(n, ast.Store())], value=v, lineno=0)
             for n, v in values.items() if not (isinstance(v, ast.Name) and v.id == n)]
    if shape == "alone":
        spliced, tail = body, []
    else:
        spliced, tail = body[:-1], [ast.Assign(targets=parent.targets, value=body[-1].value, lineno=0)]
        if ast.dump(parent.targets[0]) == ast.dump(ast.Name(getattr(body[-1].value, "id", ""), ast.Store())) \
                and len(parent.targets) == 1:
            tail = []  # `h = ...; return h` into `h = self.f(x)`: h is already bound
    spliced = [s for s in spliced if not isinstance(s, ast.Return)]
    return _splice(tree, parent, binds, spliced + tail)


def _calls(tree: ast.AST) -> list[ast.Call]:
    return t.nodes(tree, ast.Call)


class InlineMethods(t.SourcePass):
    name = "inline-methods"

    def points(self, script):
        tree = script.tree
        lookup, parents = _Lookup(tree), t.parents(tree)
        return [i for i, call in enumerate(_calls(tree)) if _plan(tree, call, lookup, parents) is not None]

    def apply(self, script, i):
        fresh = script.fresh()
        call = _calls(fresh)[i]
        plan = _plan(fresh, call, _Lookup(fresh), t.parents(fresh))
        return t.dump(fresh) if plan is not None and _inline(fresh, call, plan) else None
