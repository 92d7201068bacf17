"""The cross-checks the harness makes while a candidate runs (its "watches"): each value checked against
a second opinion: the Enzyme-JAX derivatives it takes against JAX's AD (`gradients`, with
`derivatives`), the results of its `jit`-compiled functions against op-by-op runs (`results`), and,
where either disagrees with its reference, the operation at fault (`locate`, `differences`)."""
