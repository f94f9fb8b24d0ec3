"""Define-by-run, observed in the app's process: the autograd graph of a run, its module trace, saved and
peak memory, timings with their spread, and the diff of two graphs."""
