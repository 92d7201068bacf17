"""Fails (BUG-7) because `ready` is true; but once it has run in an interpreter, it fails there on
every later run too, whatever the reason. A reducer that reuses one interpreter for its candidates
and trusts it would accept candidates that lost the real cause."""
import builtins

builtins.reducer_poison_runs = getattr(builtins, "reducer_poison_runs", 0) + 1
size = 3
ready = size * 2 > 5
if ready or builtins.reducer_poison_runs > 1:
    raise RuntimeError("BUG-7")
