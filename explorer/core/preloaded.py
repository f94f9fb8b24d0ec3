"""The fork server's last preload (explorer/core/child.py): everything its imports made (torch's, dynamo's and
inductor's modules, about 290,000 objects) is taken out of the cycle collector's reach before any worker is forked.

A worker's own first collection (machine.freeze_startup_objects) then walks only what the worker made, instead of
touching every inherited object's header, which copied each page it sat on (copy-on-write) and cost every worker
start a quarter of a CPU-second. Python's documented recipe for a process that forks without exec (gc.freeze)."""

import gc

gc.collect()
gc.freeze()
