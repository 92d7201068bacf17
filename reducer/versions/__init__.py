"""Which releases have the bug: run a reproducer under other released versions of jax, jaxlib,
enzyme-ad (or any package) and find where its failure starts and stops.

index: the releases the configured package index has; envs: one cached environment per set of
package versions (uv, pip as a fallback); probe: one run of the reproducer in such an environment,
judged here with the project's oracles; search: the bisection over the ordered versions;
record: the verdict in words, and where it is written (signature.json, report.md, and the `bisect`
table of a corpus case's case.toml); command: `reducer bisect`, and the probes that `reducer corpus
check --versions` (`reducer.corpus.versions`) runs. The versions know no corpus: the corpus imports
them.
"""
