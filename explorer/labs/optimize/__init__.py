"""The optimization lab: strategies for serving a dynamic model a workload of requests, measured end to end."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from explorer.labs.optimize.spec import SPEC

__all__ = ["SPEC"]
