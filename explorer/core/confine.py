"""The walls of a process that runs a visitor's code (the code worker): what it may use and see.

Applied in the child, after its imports and before the first job: its own process group (so a kill reaches what
it forked), its temporary directory as the working directory, an environment without the server's variables, a
ceiling on address space, file size and processes, no core dumps, no new process at all (a seccomp filter: fork,
vfork and a clone that is not a thread fail with EPERM; threads still start), and, started as root, the
unprivileged user `nobody` where it can still read the interpreter's and the project's files (a Python installed
under root's home cannot be read by nobody: the worker then stays root, walled in by the rest). Before each job,
a CPU-time budget: past it the kernel ends the process (SIGXCPU), and the parent says so and replaces it. Made
non-dumpable, the process can no longer read its own /proc entries; the environment it started with, which
/proc/self/environ would still show, is zeroed first."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import pwd
import resource
import stat
import sys

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
    os.environ.update({k: os.environ[k] for k in os.environ}, HOME=workdir, TMPDIR=workdir)  # copies, then:
    _wipe_starting_environment()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb * 2**20, file_mb * 2**20))
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if os.geteuid() == 0 and readable_by_others(*READ_PATHS):  # root may read anything: be nobody instead
        nobody = pwd.getpwnam("nobody")
        os.chown(workdir, nobody.pw_uid, nobody.pw_gid)
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    tasks = _tasks_of(os.getuid()) + procs
    resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))  # root ignores it: the filter below holds anyway
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0)
    no_new_processes(libc)


def _wipe_starting_environment() -> None:
    """Zero the block the process started with, where /proc/self/environ reads (the variables kept were copied out
    of it by setting them again)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # from field 3 on: env_start and env_end are fields 50 and 51
    start, end = int(fields[47]), int(fields[48])
    if 0 < start < end:
        ctypes.memset(start, 0, end - start)


READ_PATHS = (sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def readable_by_others(*paths: str) -> bool:
    """Whether a user with no rights of its own can reach and read every one of `paths` (each folder on the way
    searchable by others, the last readable)."""
    for path in paths:
        parts = os.path.abspath(path).split(os.sep)
        for i in range(2, len(parts) + 1):
            mode = os.stat(os.sep.join(parts[:i]) or os.sep).st_mode
            if not mode & stat.S_IXOTH or (i == len(parts) and not mode & stat.S_IROTH):
                return False
    return True


# seccomp: the filter's instructions (BPF), the syscalls it names (x86-64), and what it answers.
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_AUDIT_ARCH_X86_64 = 0xC000003E
_NR_CLONE, _NR_FORK, _NR_VFORK, _NR_CLONE3 = 56, 57, 58, 435
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def no_new_processes(libc: ctypes.CDLL) -> bool:
    """From now on this process (and its threads) can start threads but no process: fork, vfork and clone without
    CLONE_THREAD fail with EPERM, clone3 with ENOSYS (so that the C library falls back to clone, whose flags a
    filter can read). Whether the filter is in place (only on x86-64, where its syscall numbers hold)."""
    if platform.machine() != "x86_64":
        return False
    i = _Instruction
    program = [
        i(_LD_W_ABS, 0, 0, 4),  # the architecture the call was made for
        i(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        i(_RET_K, 0, 0, _ERRNO | errno.EPERM),  # a 32-bit call: numbers this filter does not know
        i(_LD_W_ABS, 0, 0, 0),  # the syscall's number
        i(_JGE_K, 0, 1, _X32_SYSCALL_BIT),  # the x32 numbering of the same calls
        i(_RET_K, 0, 0, _ERRNO | errno.EPERM),
        i(_JEQ_K, 0, 1, _NR_CLONE3),
        i(_RET_K, 0, 0, _ERRNO | errno.ENOSYS),
        i(_JEQ_K, 0, 1, _NR_FORK),
        i(_RET_K, 0, 0, _ERRNO | errno.EPERM),
        i(_JEQ_K, 0, 1, _NR_VFORK),
        i(_RET_K, 0, 0, _ERRNO | errno.EPERM),
        i(_JEQ_K, 0, 3, _NR_CLONE),
        i(_LD_W_ABS, 0, 0, 16),  # clone's first argument, its flags (low 32 bits)
        i(_JSET_K, 1, 0, _CLONE_THREAD),
        i(_RET_K, 0, 0, _ERRNO | errno.EPERM),
        i(_RET_K, 0, 0, _ALLOW),
    ]
    code = (_Instruction * len(program))(*program)
    prog = _Program(len(program), code)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0


def cpu_budget(seconds: float) -> None:
    """From now on, at most `seconds` more of CPU time for this process (user and system)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
