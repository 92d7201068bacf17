"""Fails about half of the time, inside a component the reducer cannot see into (flaky_component)."""
import flaky_component

state = {"ready": True, "items": [1, 2, 3]}
values = [x * 2 for x in state["items"]]
total = sum(values)
flaky_component.step(total)
print("ok", total)
