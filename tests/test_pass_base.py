"""The one base of every pass (`reducer.passes.ReductionPass`), at the three levels."""
import json

from reducer.engine import Chunk, proposals
from reducer.passes import Guarded, ReductionPass


def registered() -> dict:
    """Every registered pass class, by level."""
    from reducer.levels.jaxpr.passes import JAXPR_PASSES
    from reducer.levels.mlir.passes import MLIR_PASSES, TEXT_PASSES
    from reducer.levels.mlir.pipeline_passes import PIPELINE_PASSES
    from reducer.levels.source.passes import SOURCE_PASSES

    return {"source": SOURCE_PASSES, "jaxpr": JAXPR_PASSES, "IR": MLIR_PASSES + TEXT_PASSES,
            "pipeline": PIPELINE_PASSES}


def test_every_registered_pass_of_every_level_is_a_reduction_pass():
    from reducer.levels.jaxpr.passes import jaxpr_passes
    from reducer.levels.jaxpr.passes._edit import JaxprPass
    from reducer.levels.mlir.passes import local_pass, mlir_passes
    from reducer.levels.mlir.pipeline_passes import pipeline_passes
    from reducer.levels.source.passes import source_passes
    from reducer.levels.source.ast_tools import SourcePass

    assert issubclass(SourcePass, ReductionPass) and issubclass(JaxprPass, ReductionPass)
    for level, classes in registered().items():
        assert classes and all(issubclass(cls, ReductionPass) for cls in classes), level
        names = [cls.name for cls in classes]
        assert all(names) and len(set(names)) == len(names), level
    made = source_passes() + jaxpr_passes() + pipeline_passes() + mlir_passes(("stablehlo.sine", ""))
    made += [local_pass(cls.name) for cls in registered()["IR"]]
    assert all(isinstance(p, ReductionPass) for p in made)
    assert all(isinstance(p, Guarded) for p in mlir_passes())


def test_candidates_read_the_text_as_the_level_s_work_item():
    from reducer.levels.jaxpr.passes.drop_outputs import DropOutputs
    from reducer.levels.source.passes.delete_statements import DeleteStatements

    assert list(DeleteStatements().candidates("a = 1\nb = 2\n")) == ["\n", "b = 2\n", "a = 1\n"]
    from reducer.levels.jaxpr.model import Arg, Jaxpr, Spec, Var

    scalars = [Var("a", (), "float32"), Var("b", (), "float32")]
    program = Spec([], Jaxpr(scalars, [], ["a", "b"]), [Arg((), "float32")] * 2).to_json()
    outs = [Spec.from_json(c).jaxpr.outputs for c in DropOutputs().candidates(program)]
    assert outs == [["a"], ["b"]]  # the last first, never all


def test_a_guarded_pass_reports_through_the_base():
    class Broken(ReductionPass):
        name = "broken"

        def points(self, item):
            raise KeyError("nope")

    lines = []
    guarded = Guarded(Broken(), log=lines.append)
    assert list(proposals(guarded, "x")) == [] and list(guarded.candidates("y")) == []
    assert len(guarded.errors) == 2 and len(lines) == 1 and lines[0].startswith("pass broken stopped")
    assert Broken().errors == ()  # a pass nobody guards keeps no record: its exception is a tool bug


def test_drop_lines_chunks_survive_the_trip_from_the_ir_worker():
    """The IR worker sends points as JSON: the chunks of drop-lines arrive as plain lists and make
    the same candidates."""
    from reducer.levels.mlir.ir_worker import as_point
    from reducer.levels.mlir import ir_tools
    from reducer.levels.mlir.passes.drop_lines import DropLines

    program = ("module {\n  func.func @f(%a: f32) -> f32 {\n    %0 = arith.addf %a, %a : f32\n"
               "    %1 = arith.mulf %0, %a : f32\n    return %1 : f32\n  }\n}\n")
    item, p = ir_tools.Item(program, form="text"), DropLines()
    points = p.points(item)
    assert points and all(isinstance(point, Chunk) for point in points)
    here = [p.apply(item, point) for point in points]
    there = [p.apply(item, as_point(point)) for point in json.loads(json.dumps(points))]
    assert here == there and "arith.addf" not in here[0] and all(c != program for c in here)
