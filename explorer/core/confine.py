"""The walls of a process that runs a visitor's code (the code worker): what it may use and see.

Applied in the child, after its imports and before the first job: its own process group (so a kill reaches what
it forked), its temporary directory as the working directory, an environment without the server's variables, a
ceiling on address space, file size and processes, no core dumps, and (started as root) the unprivileged user
`nobody`. Before each job, a CPU-time budget: past it the kernel ends the process (SIGXCPU), and the parent says
so and replaces it. Made non-dumpable, the process can no longer read its own /proc entries, where the
environment it started with would still be."""

from __future__ import annotations

import ctypes
import os
import pwd
import resource

_PR_SET_DUMPABLE = 4
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED",
            "GE_ALLOWED_CORES_", "GE_MEASURE_CORES_")  # what torch and the engine's core pinning read


def _tasks_of(uid: int) -> int:
    """Threads and processes of `uid` now (RLIMIT_NPROC counts them all, the server's threads included)."""
    n = 0
    for status in os.listdir("/proc"):
        if status.isdigit():
            try:
                with open(f"/proc/{status}/status") as f:
                    uid_line = next(line for line in f if line.startswith("Uid:"))
                    threads = next((line for line in f if line.startswith("Threads:")), "Threads: 1")
                if int(uid_line.split()[1]) == uid:
                    n += int(threads.split()[1])
            except (OSError, StopIteration, ValueError):
                continue
    return n


def confine(workdir: str, memory_mb: int, procs: int, file_mb: int = 64) -> None:
    """Close this process in: see the module's docstring. `procs` more tasks than its user has now."""
    os.setsid()
    os.chdir(workdir)
    for name in [k for k in os.environ if k not in KEPT_ENV]:
        del os.environ[name]
    os.environ.update(HOME=workdir, TMPDIR=workdir)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb * 2**20, file_mb * 2**20))
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if os.geteuid() == 0:  # root ignores RLIMIT_NPROC and may read anything: be nobody instead
        nobody = pwd.getpwnam("nobody")
        os.chown(workdir, nobody.pw_uid, nobody.pw_gid)
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    tasks = _tasks_of(os.getuid()) + procs
    resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_DUMPABLE, 0)


def cpu_budget(seconds: float) -> None:
    """From now on, at most `seconds` more of CPU time for this process (user and system)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
