"""Pipeline-level passes: they shrink an MLIR pass pipeline string (see `reducer.levels.mlir.pipeline`).

Each pass reads the parsed pipeline (`PipelineText.parse`: a list of `PassSpec`), reports its change
points and renders the smaller pipeline for one point (`reducer.engine`'s contract); it never runs
anything. One line per pass below.
"""
from __future__ import annotations

from reducer.levels.mlir.pipeline_passes.drop_options import DropOptions
from reducer.levels.mlir.pipeline_passes.drop_passes import DropPasses

#: pipeline passes, in the order a round runs them
PIPELINE_PASSES = [
    DropPasses,
    DropOptions,
]


def pipeline_passes() -> list:
    return [cls() for cls in PIPELINE_PASSES]
