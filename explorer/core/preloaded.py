"""The fork server's last preload (explorer/core/child.py): everything its imports made (torch's, dynamo's and
inductor's modules) is taken out of the cycle collector's reach before any worker is forked.

A worker's own first collection (machine.freeze_startup_objects) then walks only what the worker made, instead of
touching every inherited object's header, which copied each page it sat on (copy-on-write): a forked worker's
start, bench/RESULTS-worker-start.md; its own pages, tests/workers/test_process.py. Python's documented recipe for
a process that forks without exec (gc.freeze)."""

import gc

gc.collect()
gc.freeze()
