"""The walls of a process that runs a visitor's code (the code worker): what it may use, see and reach.

Applied in the child, after its imports and before the first job (and while it is the process's only thread:
Landlock and the seccomp filter bind the calling thread and whatever it starts): its own process group (so a kill
reaches what it forked), its temporary directory as the working directory, an environment without the server's
variables (the block /proc/self/environ reads zeroed too), no file descriptor but its job's connection (standard
output and error to /dev/null: the server's log was one), a ceiling on address space, file size and processes, no
core dumps; started as root, the unprivileged user `nobody` where it can still read the interpreter's and the
project's files (else root with every capability dropped and the "root" bits locked off); then the kernel's walls:

- Landlock (explorer/core/landlock.py): read-only the interpreter, its packages, the project and the system's
  libraries, its own /proc entries; read-write its temporary directory and /dev/null; nothing else. No TCP bind or
  connect; signals and abstract UNIX sockets only within its own domain; no ptrace of a process outside it.
- seccomp: no new process (fork, vfork, and a clone that is not a thread fail with EPERM; threads still start) and
  no new socket of any family (EACCES): no UNIX socket to the server, no UDP, no netlink.
- PR_SET_NO_NEW_PRIVS: nothing it could execute gains a privilege.

Before each job, a CPU-time budget: past it the kernel ends the process (SIGXCPU), and the parent says so and
replaces it. Which walls this kernel offers is `offered()`; GE_WALLS_OFF_ (a test's switch) takes walls away."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import pwd
import resource
import stat
import sys
from dataclasses import dataclass
from multiprocessing import resource_tracker

from explorer.core import landlock
from explorer.core.child import stop_watching

_PR_SET_DUMPABLE = 4
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "PYTHONHASHSEED", "GE_ALLOWED_CORES_", "GE_MEASURE_CORES_")  # what torch and the engine's core pinning read


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


WALLS = ("landlock-files", "landlock-tcp", "landlock-scope", "seccomp", "capabilities", "descriptors")
OFF_ENV = "GE_WALLS_OFF_"  # a test's switch: walls (comma-separated, or "all") treated as missing
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/sys/devices/system/cpu")  # no secret in any


def _off() -> set[str]:
    said = {w.strip() for w in os.environ.get(OFF_ENV, "").split(",") if w.strip()}
    return set(WALLS) if "all" in said else said


@dataclass(frozen=True)
class Walls:
    """The walls around the code worker: up, by name (WALLS), and who it runs as."""

    up: tuple[str, ...]
    user: str  # "nobody", "root without capabilities" or the server's own user
    landlock_abi: int = 0

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(w for w in WALLS if w not in self.up)

    def said(self) -> str:
        """One line: the walls up, and any missing."""
        up = {"landlock-files": "files", "landlock-tcp": "TCP", "landlock-scope": "signals and sockets"}
        kept = [up[w] for w in WALLS[:3] if w in self.up]
        parts = [f"Landlock ABI {self.landlock_abi} ({', '.join(kept)})"] if kept else []
        parts += ["seccomp (no process, no socket)"] * ("seccomp" in self.up)
        parts += ["no inherited descriptor"] * ("descriptors" in self.up) + [f"runs as {self.user}"]
        line = "Walls around your code: " + "; ".join(parts)
        return line + (f". MISSING: {', '.join(self.missing)}" if self.missing else "")


def offered() -> Walls:
    """The walls this machine would put up (the kernel's Landlock ABI, seccomp on x86-64), less the switched-off
    ones: what the server says before the code worker starts, and what the worker must then raise."""
    abi = landlock.abi()
    up = [w for w, ok in (("landlock-files", abi >= 1), ("landlock-tcp", abi >= 4), ("landlock-scope", abi >= 6),
                          ("seccomp", platform.machine() == "x86_64"), ("capabilities", True),
                          ("descriptors", True)) if ok]
    off = _off()
    return Walls(tuple(w for w in up if w not in off), _user_to_be(), abi)


def _user_to_be() -> str:
    if os.geteuid() != 0:
        return f"the server's own user ({pwd.getpwuid(os.geteuid()).pw_name})"
    return "nobody" if readable_by_others(*READ_PATHS) else "root without capabilities"


def confine(workdir: str, memory_mb: int, procs: int, keep_fd: int, file_mb: int = 64) -> Walls:
    """Close this process in: see the module's docstring. `procs` more tasks than its user has now; `keep_fd`: its
    job's connection. Returns the walls raised (every one `offered()` names, or an OSError)."""
    want = offered()
    stop_watching()
    if (threads := len(os.listdir("/proc/self/task"))) > 1:  # one would run outside every wall
        raise OSError(errno.EPERM, f"{threads - 1} thread(s) started before the walls: no code runs here")
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
    if want.user == "nobody":  # root may read anything: be nobody instead
        nobody = pwd.getpwnam("nobody")
        os.chown(workdir, nobody.pw_uid, nobody.pw_gid)
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    tasks = _tasks_of(os.getuid()) + procs
    resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))  # root ignores it: the filter below holds anyway
    own = f"/proc/{os.getpid()}"  # (its pid before the /proc entries are walled off)
    if "descriptors" in want.up:
        _only_fd(keep_fd)
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0)
    if "capabilities" in want.up:
        _drop_capabilities(libc)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    raised = landlock.restrict((*READ_PATHS, *SYSTEM_READ, own), (workdir, os.devnull),
                               files="landlock-files" in want.up, tcp="landlock-tcp" in want.up,
                               scoped="landlock-scope" in want.up)
    got = [w for w, ok in (("landlock-files", raised.files), ("landlock-tcp", raised.tcp),
                           ("landlock-scope", raised.scoped),
                           ("seccomp", "seccomp" in want.up and no_new_processes(libc)),
                           ("capabilities", "capabilities" in want.up),
                           ("descriptors", "descriptors" in want.up)) if ok]
    if missing := [w for w in want.up if w not in got]:  # offered, and not raised: no job runs without it
        raise OSError(errno.EPERM, f"walls the kernel offered did not go up: {', '.join(missing)}")
    return Walls(tuple(got), want.user, raised.abi)


def _only_fd(keep: int) -> None:
    """No file descriptor that leads out: standard output and error (the server's log) and input on /dev/null,
    multiprocessing's resource tracker (told to unlink a name, it would) and any file or socket but `keep` (its
    job's connection) closed. Kept: the pipes of its own process's lifetime that multiprocessing passed it (its
    parent learns from one that it ended, and it from the other that its parent did)."""
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(null, std)
    tracker = resource_tracker.getfd()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd == keep:
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed since
            continue
        if fd == tracker or not target.startswith("pipe:"):
            os.close(fd)


# capabilities: the "root" securebits locked off, the bounding and ambient sets emptied, then every set cleared
_PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
_SECURE_NOROOT_ALL = 0xEF  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, NO_CAP_AMBIENT_RAISE: set or locked
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """Every capability gone for good: as root (the worker stays root where nobody cannot read Python) it can then
    neither bypass a file's mode nor regain one by setuid(0). Nothing to drop for another user."""
    if os.geteuid() == 0:
        libc.prctl(_PR_SET_SECUREBITS, _SECURE_NOROOT_ALL, 0, 0, 0)  # (needs CAP_SETPCAP: before the drops)
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(_CapHeader(_CAPABILITY_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


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
_NR_SOCKET, _NR_CLONE, _NR_FORK, _NR_VFORK, _NR_CLONE3 = 41, 56, 57, 58, 435
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def no_new_processes(libc: ctypes.CDLL) -> bool:
    """From now on this thread (and the threads it starts) can start threads but no process and open no socket:
    fork, vfork and clone without CLONE_THREAD fail with EPERM, clone3 with ENOSYS (so that the C library falls back
    to clone, whose flags a filter can read), socket with EACCES. Whether the filter is in place (only on x86-64,
    where its syscall numbers hold)."""
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
        i(_JEQ_K, 0, 1, _NR_SOCKET),
        i(_RET_K, 0, 0, _ERRNO | errno.EACCES),
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
