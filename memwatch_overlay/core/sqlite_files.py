"""The files SQLite opens beside a database file on its own: its rollback journal, WAL and
shared-memory index. One of them that is not a regular file (a FIFO, a device, a socket, a
folder) would make SQLite block forever on open (a FIFO `-journal`: SQLite reads it to see
whether it is a hot journal) or fail with an obscure I/O error; callers refuse such a
database with a one-line error naming the file instead."""
from __future__ import annotations

import os
import stat
from pathlib import Path

SIDECARS = ("-journal", "-wal", "-shm")


def special_sidecar(path: str | os.PathLike) -> str | None:
    """'<file>: is a FIFO (named pipe), not a SQLite journal file' for the first sidecar of
    `path` that exists and is not a regular file; None when there is none."""
    for suffix in SIDECARS:
        side = Path(f"{path}{suffix}")
        try:
            mode = os.stat(side).st_mode
        except OSError:       # absent (the usual case), or not even stat-able: SQLite will say
            continue
        if not stat.S_ISREG(mode):
            kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else
                    "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
                    "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            return f"{side}: is {kind}, not a SQLite {'journal' if suffix == '-journal' else suffix[1:]} file"
    return None
