"""What the reducer knows of the libraries a training script trains with, one adapter per library:
how an optimizer is made, held, stepped on a toy problem and fixed (`OPTIMIZERS`, `HOLDERS`), and what
wraps the range a loop trains over (`PROGRESS`). The starts and the counterfactual read a library only
through these; another library (a hand-written optimizer's protocol, a Keras-style loop's progress
bar) is one module and one line here.
"""
from __future__ import annotations

from reducer.libraries.base import Fix, OptimizerLibrary, Toy
from reducer.libraries.example_optimizers import ExampleOptimizers
from reducer.libraries.flax_holders import FlaxHolders
from reducer.libraries.optax import Optax
from reducer.libraries.progress_bars import RichTrack, Tqdm

#: the optimizer libraries, in the order a use is traced back to them
OPTIMIZERS: tuple[OptimizerLibrary, ...] = (Optax(), ExampleOptimizers())
#: what holds an optimizer a program made (`TrainState.create(…, tx=tx)`, `nnx.Optimizer(model, tx)`)
HOLDERS = (FlaxHolders(),)
#: what wraps a loop's `range` (`tqdm(range(n))`, `track(range(n))`)
PROGRESS = (Tqdm(), RichTrack())

__all__ = ["Fix", "OptimizerLibrary", "Toy", "OPTIMIZERS", "HOLDERS", "PROGRESS", "fixes", "loop_range"]


def fixes() -> dict[str, Fix]:
    """Each optimizer library's fix, by the name a reduction records it under."""
    return {lib.fix.name: lib.fix for lib in OPTIMIZERS if lib.fix is not None}


def loop_range(iterable):
    """The `range(…)` call a progress bar wraps (`tqdm(range(n))`, `trange(n)` as `range(n)`), or
    the iterable itself."""
    for bar in PROGRESS:
        found = bar.range_of(iterable)
        if found is not None:
            return found
    return iterable
