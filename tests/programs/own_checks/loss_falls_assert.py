"""A check that the loss falls, with no message."""
first, last = 0.5, 0.75
assert last < first
