"""`reducer hunt`: find bugs before users do.

One small program per (operation, mode of differentiation, route, dtype) is generated from the
operations table (`ops.toml`), run in the sandbox under the harness, and judged by the project's
oracles and by the hunt's own comparison of each derivative against JAX's AD (for the Enzyme-JAX
route) and float64 central finite differences. Failures are grouped by signature, one program is
kept per signature, reduced by the normal reduction, and summarised in `hunt.md` / `hunt.json`.

- `table`: the operations and the probes (operation x mode x route x dtype);
- `programs`: the program text of a probe;
- `judge`: a probe's run turned into a finding (signature) or a clean verdict;
- `sweep`: the whole hunt and its summary; `report`: hunt.md.

Where programs and reductions run (this machine, or a Ray cluster) is `reducer.executors`.
"""
