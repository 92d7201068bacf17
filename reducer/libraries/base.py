"""The adapter an optimizer library gives the reducer: where a program makes and uses one of its
optimizers, the lines that step it on a toy problem, and the fix that makes a misconfigured one
descend as the library documents."""
from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class Fix:
    """A prologue that takes a misconfiguration away (a learning rate of the wrong sign), what it does
    in words, and the name a reduction records it under."""

    name: str
    prologue: str
    words: str


@dataclass(frozen=True)
class Toy:
    """The names the toy problem's lines use: the optimizer as the program binds it (`optimizer`, or
    `opt_init, opt_update, get_params`), the loss, the parameters, the optimizer's state, the update."""

    optimizer: str
    loss: str
    params: str
    state: str
    updates: str


class OptimizerLibrary(ABC):
    """One optimizer library. `modules` are the import paths whose names refer to it; `toy_imports`
    how the toy problem imports each name it uses that the program may not; `target` the name(s) an
    optimizer made inside another call is given."""

    name = ""
    modules: tuple[str, ...] = ()
    toy_imports: dict[str, str] = {}
    target = "optimizer"
    fix: Fix | None = None

    def bound(self, tree: ast.Module) -> set[str]:
        """The names the program's imports bind to this library or to one of its functions."""
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in self.modules:
                        found.add(a.asname)
                    elif a.name.split(".")[0] in self.modules:
                        found.add((a.asname or a.name).split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if any(node.module == m or node.module.startswith(m + ".") for m in self.modules):
                    found |= {a.asname or a.name for a in node.names}
                found |= {a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in self.modules}
        return found

    def used_in(self, program: str) -> bool:
        """Whether a program's text mentions the library at all (the fix is worth trying)."""
        return any(m.split(".")[-1] in program for m in self.modules)

    @abstractmethod
    def makes(self, function: str) -> bool:
        """Whether the library's function of this name makes an optimizer (not a schedule, a loss)."""

    @abstractmethod
    def uses(self, tree: ast.Module) -> list[ast.expr]:
        """The expressions that stand for an optimizer where the program uses one."""

    @abstractmethod
    def one_update(self, toy: Toy) -> tuple[list[str], str]:
        """The lines of one update from a fresh state, and the parameters they give."""

    @abstractmethod
    def first_state(self, toy: Toy) -> list[str]:
        """The lines that make the optimizer's first state."""

    @abstractmethod
    def step(self, toy: Toy, variable: str) -> list[str]:
        """The lines of one step of a loop over `variable`, leaving the parameters in `toy.params`."""
