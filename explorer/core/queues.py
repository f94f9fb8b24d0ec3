"""The server's queues: each event waits in one, by name, and each runs as many events at once as it allows
(`explorer.server.concurrency`)."""

from enum import Enum


class Queue(Enum):
    MEASURE = "measure"  # timings: every event may wait here, the measurement queue shows the wait
    COMPILE = "compile"  # the compile worker's jobs
    DEPLOY = "deploy"  # the deployment worker's routes
    DDP = "ddp"  # a distributed run: every core, one at a time server-wide
    CLAIMS = "claims"  # a claim's experiment
    EXPORT = "export"  # writing a session's downloads
    DRAW = "draw"  # redraws that time nothing (the generation step slider): never behind a measurement
    STEPS = "steps"  # a lesson's previous/next: one at a time, each reading the step the one before left
