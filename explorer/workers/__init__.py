"""The worker processes jobs run in, for every kind of job (compiles, exports, distributed runs, visitors' code):
the process and its bounds (process.py), the typed jobs and replies that cross its pipe (protocol.py, messages.py)."""
