"""Many people on one server: the measurement queue and the bound on built models."""
