"""What the harness watches while a candidate runs: the Enzyme-JAX derivatives it takes
(`gradients`), the results of its `jit`-compiled functions (`results`), and, where either disagrees
with its reference, the operation at fault (`locate`)."""
