"""A script that stops with a message of its own."""
import sys

losses = [1.0, 0.5, 2.5]
if losses[-1] > losses[0]:
    sys.exit(f"training diverged: final loss {losses[-1]}")
