"""Which names Python statements bind and read at module level, scopes followed (functions, lambdas,
classes, comprehensions): for moving code between modules (`reducer.readers.user_code`)."""
from __future__ import annotations

import ast

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
          ast.DictComp, ast.GeneratorExp)


def bound(nodes) -> set[str]:
    """The names the statements `nodes` bind in their own scope (not in the scopes they make)."""
    out, declared, todo = set(), set(), list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
            todo += node.decorator_list
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        if not isinstance(node, SCOPES):
            todo += ast.iter_child_nodes(node)
    return out - declared


def _params(args: ast.arguments) -> set[str]:
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg for a in every}


class Globals(ast.NodeTransformer):
    """Calls `on(name, attrs)` for each reference to a module-level name (a load, store or deletion, the
    name a top-level `def` or `class` binds), `attrs` the attributes read from it (`pkg.mod.f`); what it
    returns, (new name, how many of the attributes that name stands for) or None, is written."""

    def __init__(self, on, module_name: str | None = None):
        self.on, self.module_name = on, module_name
        self.shadow: frozenset = frozenset()  # the enclosing functions' locals
        self.cls: frozenset = frozenset()  # the class body's own names, in that body only
        self.depth = 0  # how many scopes in: 0 at module level

    def _ref(self, name: str, attrs: list[str]):
        return None if name in self.shadow or name in self.cls else self.on(name, attrs)

    def visit_Name(self, node):
        if node.id == "__name__" and self.module_name and node.id not in self.shadow:
            return ast.copy_location(ast.Constant(self.module_name), node)  # what the module's name was
        got = self._ref(node.id, [])
        if got:
            node.id = got[0]
        return node

    def visit_Attribute(self, node):
        attrs, base = [], node
        while isinstance(base, ast.Attribute):
            attrs.insert(0, base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id == "__name__":
            self.generic_visit(node)
            return node
        got = self._ref(base.id, attrs)
        if not got:
            return node
        out: ast.expr = ast.Name(got[0], ast.Load() if got[1] < len(attrs) else node.ctx)
        for i, attr in enumerate(attrs[got[1]:], start=got[1] + 1):
            out = ast.Attribute(out, attr, ast.Load() if i < len(attrs) else node.ctx)
        return ast.copy_location(out, node)

    def visit_Import(self, node):
        """A module-level import binds a name too: renamed, `import a.b` is `name = __import__("a.b")`."""
        if self.depth:
            return node
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            new = (self.on(local, []) or (local,))[0]
            if new != local and (alias.asname or "." not in alias.name or isinstance(node, ast.ImportFrom)):
                alias.asname = new
            elif new != local:
                call = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant(alias.name)], [])
                return ast.copy_location(ast.Assign([ast.Name(new, ast.Store())], call), node)
        return node

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        node.names = [(self.on(n, []) or (n,))[0] for n in node.names]
        return node

    def _scoped(self, node, shadow, cls, fields):
        saved = self.shadow, self.cls
        self.shadow, self.cls, self.depth = frozenset(shadow), frozenset(cls), self.depth + 1
        for name in fields:
            value = getattr(node, name)
            setattr(node, name, [self.visit(v) for v in value] if isinstance(value, list) else self.visit(value))
        (self.shadow, self.cls), self.depth = saved, self.depth - 1

    def _name(self, node):
        if not self.depth:  # a module-level def or class
            node.name = (self.on(node.name, []) or (node.name,))[0]

    def visit_FunctionDef(self, node):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        self.generic_visit_arguments(node.args)
        if node.returns:
            node.returns = self.visit(node.returns)
        self._name(node)
        self._scoped(node, self.shadow | _params(node.args) | bound(node.body), (), ["body"])
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def generic_visit_arguments(self, args: ast.arguments):
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [d and self.visit(d) for d in args.kw_defaults]
        for a in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
            if a.annotation:
                a.annotation = self.visit(a.annotation)

    def visit_Lambda(self, node):
        self.generic_visit_arguments(node.args)
        self._scoped(node, self.shadow | _params(node.args), (), ["body"])
        return node

    def visit_ClassDef(self, node):
        for name in ("decorator_list", "bases", "keywords"):
            setattr(node, name, [self.visit(v) for v in getattr(node, name)])
        self._name(node)
        self._scoped(node, self.shadow, bound(node.body), ["body"])
        return node

    def _comprehension(self, node):
        targets = bound([g.target for g in node.generators])
        self._scoped(node, self.shadow | targets, self.cls, [f for f in node._fields])
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def identifiers(tree: ast.AST) -> set[str]:
    """Every name a tree spells: variables, parameters, definitions, imports' names, declarations."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            out.update(node.names)
    return out
