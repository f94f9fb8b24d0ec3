"""The server's queues: each event waits in one, by name, and each runs as many events at once as it allows
(`explorer.server.concurrency`). A lab with a worker of its own has a queue of its own too, named after that
worker (explorer/labs/contract.py `OwnWorker`): one run at a time server-wide."""

from enum import Enum


class Queue(Enum):
    MEASURE = "measure"  # timings: every event may wait here, the measurement queue shows the wait
    COMPILE = "compile"  # the compile worker's jobs
    CLAIMS = "claims"  # a claim's experiment
    TEACHER = "teacher"  # a room's teacher's experiment: not behind the visitors' (and first on the board)
    EXPORT = "export"  # writing a session's downloads
    DRAW = "draw"  # redraws that time nothing (the generation step slider): never behind a measurement
    STEPS = "steps"  # a lesson's previous/next: one at a time, each reading the step the one before left
