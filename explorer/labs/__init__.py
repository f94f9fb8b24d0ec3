"""The labs: each a package with one spec (`spec.py`), registered in `registry.py`."""
