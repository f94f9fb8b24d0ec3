"""The Code tab's engine: a zoo model's Python, edited in the browser, rebuilt and run in the confined code worker
(only where the operator allowed code: explorer/code/allowed.py)."""
