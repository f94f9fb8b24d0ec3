"""The batching lab: sentences of many lengths in one batch, run with every strategy (pad, bucket, pack,
nested, loop), checked against the loop, timed eagerly here and compiled in the worker."""
