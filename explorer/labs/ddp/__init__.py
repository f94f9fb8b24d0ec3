"""The multi-process lab: dynamic graphs under DistributedDataParallel, on several processes of this machine."""
