"""The debugging lab: the same injected bug in eager, compiled and traced code, side by side."""
