"""The model contract: where a lab and the Playground get a model from, never from `models.ZOO` directly.

A model source gives a name, its knobs (a config dataclass of `knob()` fields), `build(config)`, the inputs a text
makes, the loss a train step takes, a parameter count and an activation bound, and what it supports. The zoo
(`models/`) is the first source; a person's own file, a library architecture and a notebook are the next ones,
each one module here and one line in `registry.py`."""
