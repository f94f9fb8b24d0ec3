"""Landlock, the kernel's sandbox for unprivileged processes (Linux 5.13 and later): a process restricts itself, and
every process it would start, to the files its rules name, no TCP bind or connect (ABI 4), and signals and abstract
UNIX sockets within its own domain (ABI 6); tracing a process outside the domain is refused from ABI 1. The three
system calls through ctypes (their numbers are the same on x86-64 and arm64); `abi()` says what this kernel offers.
The user-space API: https://docs.kernel.org/userspace-api/landlock.html"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from dataclasses import dataclass

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}  # + REFER, TRUNCATE, IOCTL_DEV
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | (1 << 14) | (1 << 15)  # the rights a rule on a file may grant
READ = EXECUTE | READ_FILE | READ_DIR
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The Landlock ABI this kernel offers, 0 where it offers none (an older kernel, or Landlock not enabled)."""
    version = _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, version)


@dataclass(frozen=True)
class Landlocked:
    """What the restriction covers, by the ABI the kernel offered."""

    abi: int
    files: bool  # only the paths its rules name (ABI 1)
    tcp: bool  # no TCP bind or connect (ABI 4)
    scoped: bool  # signals and abstract UNIX sockets only within its domain (ABI 6)


def restrict(read: Iterable[str], write: Iterable[str], files: bool = True, tcp: bool = True,
             scoped: bool = True) -> Landlocked:
    """Restrict the calling thread and every thread and process it starts from now on (a thread started before
    is not: call it while the process has one) to reading `read` (files and directories beneath), reading and
    writing `write`, and, as far as the kernel's ABI goes and the flags ask, no TCP and a scope of its own. Raises
    OSError where the kernel refuses; needs PR_SET_NO_NEW_PRIVS (or CAP_SYS_ADMIN)."""
    version = abi()
    if not version:
        return Landlocked(0, False, False, False)
    fs = _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= version)] if files else 0
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if tcp and version >= 4 else 0
    scope = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if scoped and version >= 6 else 0
    if not fs | net | scope:  # nothing asked (a ruleset that handles nothing is refused)
        return Landlocked(version, False, False, False)
    attr = _RulesetAttr(fs, net, scope)
    size = 24 if version >= 6 else 16 if version >= 4 else 8  # the struct as this ABI knows it
    ruleset = _check(_libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    try:
        if fs:
            for paths, access in ((read, READ), (write, fs)):
                for path in paths:
                    _allow(ruleset, path, access & fs)
        _check(_libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)))
    finally:
        os.close(ruleset)
    return Landlocked(version, bool(fs), bool(net), bool(scope))


def _allow(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:  # a path this machine does not have (/lib64 on some): nothing to allow
        return
    try:
        if not os.path.isdir(path):
            access &= _FILE_ONLY
        rule = _PathBeneath(access, fd)
        _check(_libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                             ctypes.c_uint32(0)))
    finally:
        os.close(fd)


def _check(result: int) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result
