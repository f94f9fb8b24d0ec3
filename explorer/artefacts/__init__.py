"""Take-away files that PyTorch's own tools read, and the state as code."""
