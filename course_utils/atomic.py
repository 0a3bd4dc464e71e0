"""One way to replace a file so that no reader, crash or second writer ever sees half of it.

Used by :mod:`course_utils.checkpoint` (training checkpoints) and :mod:`course_utils.ledger` (the
results file). The recipe, step by step:

1. write to a temporary file with a *unique* name in the target's folder (``os.replace`` is atomic
   only within one file system, and a fixed name such as ``target.tmp`` lets two writers write into
   the same file at once);
2. give it the mode a new file gets from the umask (``mkstemp`` creates ``0600``, which hides the
   file from the group on a shared machine);
3. flush and ``fsync`` it, so the bytes are on disk before any name points at them;
4. ``os.replace`` it over the target: readers see the old file or the new one, never a mix;
5. ``fsync`` the folder, so the rename itself survives a power cut;
6. on any failure (a full disk, Ctrl-C), remove the temporary file and leave the target as it was.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable


def current_umask() -> int:
    """This process's umask. Read from ``/proc`` where it exists: setting it to read it (the only
    portable way) briefly changes it for every thread of the process."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` would give a new file: ``0o666`` minus the umask."""
    return 0o666 & ~current_umask()


def fsync_dir(folder: str | Path) -> None:
    """Make a rename inside ``folder`` durable. A no-op on Windows, which cannot open a folder
    for ``fsync`` (NTFS journals the rename itself)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[BinaryIO], Any]) -> Path:
    """Replace ``path`` with what ``write(f)`` writes into ``f``, atomically (see the module doc).

    ``f`` is a binary file opened for writing (seekable). An ``OSError`` (disk full, a size limit)
    is re-raised with the target's name and the promise that nothing changed; any other exception
    passes through unchanged. The temporary file is removed in both cases.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        _fill(fd, write)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _explained(exc, path) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path


def _fill(fd: int, write: Callable[[BinaryIO], Any]) -> None:
    """Set the umask's mode on the open temporary file, let ``write`` fill it, flush, fsync, close."""
    with os.fdopen(fd, "wb") as f:
        if hasattr(os, "fchmod"):  # POSIX; on Windows the mode bits mean little
            os.fchmod(f.fileno(), new_file_mode())
        write(f)
        f.flush()
        os.fsync(f.fileno())


def _explained(exc: OSError, path: Path) -> OSError:
    """The same error (same errno, so the same ``OSError`` subclass), saying which file and what is left."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    message = (f"{reason} while writing {path} (disk full, or a file size limit?); "
               f"{path.name} was not changed and the temporary file was removed")
    return OSError(exc.errno, message) if exc.errno is not None else OSError(message)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically."""
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``text`` atomically. Used by: :func:`course_utils.ledger.record`."""
    return atomic_write_bytes(path, text.encode(encoding))
