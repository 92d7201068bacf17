"""Cut the program: the outputs of a run of top-level equations become new inputs (built as
ones), so that everything computing them goes."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import chunks, clone, finish, real_eqns


class PromoteToInputs:
    name = "promote-to-inputs"

    def candidates(self, program: str) -> Iterator[str]:
        spec = jp.loads(program)
        idx = real_eqns(spec["jaxpr"])
        for part in chunks(len(idx)):
            chosen = {idx[k] for k in part}
            new = clone(spec)
            j = new["jaxpr"]
            promoted = [o for i in sorted(chosen) for o in j["eqns"][i]["out"]]
            j["eqns"] = [e for i, e in enumerate(j["eqns"]) if i not in chosen]
            for o in promoted:
                j["in"].append(list(o))
                new["args"].append({"shape": o[1], "dtype": o[2]})
            for t in new["transforms"]:
                if t["t"] == "vmap":
                    t["in_axes"] += [None] * len(promoted)
            yield finish(new)
