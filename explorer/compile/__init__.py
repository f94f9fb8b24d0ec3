"""torch.compile, observed: options (safe anywhere), observation and the compiled model (in the worker),
typed jobs and replies, the worker process, and a session's compile track (in the app)."""
