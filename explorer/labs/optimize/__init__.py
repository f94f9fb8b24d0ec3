"""The optimization lab: strategies for serving a dynamic model a workload of requests, measured end to end."""
