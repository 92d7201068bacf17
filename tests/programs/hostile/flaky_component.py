"""Stands for a nondeterministic library (a race, an uninitialised read): fails half of the time."""
import os


def step(value):
    if os.urandom(1)[0] < 128:
        raise SystemExit(f"FLAKY-BUG after {value}")
