"""The Claims tab's engine: what people say about dynamic graphs, each tested by an experiment built from the
Playground's and the labs' engines, with a verdict computed from what it measured."""
