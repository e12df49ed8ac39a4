"""Confining a process to reading its own code: Linux's Landlock, from Python, without root.

A parser child (`documents.sandbox`) parses files a customer uploaded with C libraries
(pdfium, lxml) that a crafted file may exploit. Before it reads any document it calls
`confine_to(readable)`: from then on it (and anything it starts) may read, list and execute
only beneath `readable` (its Python, its libraries, the engine's source) and write nowhere,
open no TCP connection and signal no process outside itself. So it cannot read the worker's
environment (`/proc/<ppid>/environ`: S3 keys, the database URL, SECRET_KEY), another
tenant's cached index, or anything else of the worker's user. Landlock rules cannot be
lifted once applied, not even by the process itself.

Landlock needs Linux 5.13 or later with the LSM enabled; where it is missing, `confine_to`
changes nothing and returns None, and the caller says so once in its log. The kernel's
interface is three system calls and two structures (linux/landlock.h); the access rights a
kernel does not know are left out by its ABI version, so one binary works on all of them.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterable
from pathlib import Path

# System call numbers: the same on every architecture that has them (the "generic" table).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# File-system rights, by the ABI version that introduced them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

_READ_AND_RUN_DIR = _EXECUTE | _READ_FILE | _READ_DIR
_READ_AND_RUN_FILE = _EXECUTE | _READ_FILE


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in linux/landlock.h
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, too old, off)."""
    if platform.system() != "Linux":
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def confine_to(readable: Iterable[str | Path]) -> int | None:
    """Restrict this process, for good, to reading and executing beneath `readable` (paths
    that do not exist are skipped), with no writes, no TCP and (ABI 6) no signals or
    abstract sockets outside it. The ABI version it used; None where Landlock is missing or
    refused the rules (then nothing was restricted)."""
    abi = abi_version()
    if abi < 1:
        return None
    libc = _libc()
    fs_rights = _FS_RIGHTS_BY_ABI[max(v for v in _FS_RIGHTS_BY_ABI if v <= abi)]
    attr = _RulesetAttr(handled_access_fs=fs_rights)
    size = 8  # the first field alone, as ABI 1-3 kernels know it
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return None
    try:
        for path in dict.fromkeys(Path(p).resolve() for p in readable):
            if not path.exists():
                continue
            rights = _READ_AND_RUN_DIR if path.is_dir() else _READ_AND_RUN_FILE
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(allowed_access=rights & fs_rights, parent_fd=fd)
                if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                    return None
            finally:
                os.close(fd)
        # Required of a process without CAP_SYS_ADMIN; it also keeps setuid programs from
        # gaining anything.
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            return None
        if libc.syscall(_RESTRICT_SELF, ruleset, 0):
            return None
    finally:
        os.close(ruleset)
    return abi
