"""Saving and resuming training state without losing it (notebook 07).

Three rules, one function each:

* :func:`atomic_save` writes to a temporary file in the same folder, flushes it to disk and only
  then renames it over the target with ``os.replace``: a crash mid-write never leaves half a
  checkpoint under the real name.
* :func:`load_checkpoint` loads with ``weights_only=True`` (a checkpoint is data, not code) and
  turns a truncated or refused file into a :class:`CheckpointError` that names the file.
* :func:`save_checkpoint` keeps the last ``keep`` checkpoints of a run; :func:`load_latest`
  resumes from the newest one that loads.

:func:`training_state` / :func:`restore_training_state` say what goes into a training checkpoint:
model, optimizer, LR scheduler, GradScaler, step and every random generator.
"""
from __future__ import annotations

import os
import pickle
import random
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np
import torch

PREFIX = "ckpt_"
SUFFIX = ".pt"


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, truncated, corrupt, or refused by ``weights_only`` loading."""


class UnsafeCheckpointError(CheckpointError):
    """``weights_only=True`` refused a global (a class or function) that is not allow-listed."""


def atomic_save(obj: Any, path: str | Path, *, wrap: Callable[[BinaryIO], Any] | None = None) -> Path:
    """``torch.save(obj)`` to ``path`` atomically: temporary file beside it, fsync, ``os.replace``.

    Readers see the old file or the new one, never a mix. If the process dies mid-write only a
    hidden ``.<name>.*.tmp`` file is left behind. ``wrap`` wraps the open temporary file (notebook
    07 and the tests use it to stop a writer half-way). Used by: notebook 07.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, wrap(f) if wrap else f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)  # atomic on POSIX and Windows (same folder, same file system)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)  # make the rename itself durable
    return path


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":  # Windows cannot open a folder for fsync; NTFS journals the rename
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_checkpoint(path: str | Path, map_location: str | torch.device | None = "cpu") -> Any:
    """``torch.load(path, weights_only=True)`` with errors that say what is wrong with which file.

    Raises :class:`CheckpointError` for a missing, empty, truncated or corrupt file and
    :class:`UnsafeCheckpointError` when the file needs a global that is not allow-listed
    (allow a class you trust with ``torch.serialization.safe_globals([cls])``). Used by: notebook 07.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    size = path.stat().st_size
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        detail = next((ln.strip() for ln in str(exc).splitlines() if "GLOBAL" in ln), "")
        raise UnsafeCheckpointError(
            f"{path}: refused by torch.load(weights_only=True): {detail or 'not loadable as plain data'}"
        ) from exc
    except PermissionError:
        raise
    except (EOFError, OSError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0].split(". ")[0][:160] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, (EOFError, OSError)) or any(w in first.lower() for w in ("zip", "archive", "stream")):
            raise CheckpointError(
                f"{path} is truncated or corrupt ({size} bytes); was its save interrupted? ({first})"
            ) from exc
        raise CheckpointError(f"{path} could not be loaded: {first}") from exc


def checkpoint_path(folder: str | Path, step: int) -> Path:
    """``folder/ckpt_<step, 8 digits>.pt``: names sort in step order. Used by: notebook 07."""
    return Path(folder) / f"{PREFIX}{step:08d}{SUFFIX}"


def list_checkpoints(folder: str | Path) -> list[Path]:
    """The run's checkpoints, oldest first (temporary files of interrupted saves are not listed).

    Used by: notebook 07.
    """
    found = [p for p in Path(folder).glob(f"{PREFIX}*{SUFFIX}") if p.stem[len(PREFIX):].isdigit()]
    return sorted(found, key=lambda p: int(p.stem[len(PREFIX):]))


def save_checkpoint(state: Any, folder: str | Path, step: int, keep: int = 3) -> Path:
    """Atomically save ``state`` as the checkpoint of ``step``, then delete all but the newest ``keep``.

    Rotation runs only after the new file is safely in place, so there are never fewer than
    ``min(keep, saved so far)`` complete checkpoints. Used by: notebook 07.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    path = atomic_save(state, checkpoint_path(folder, step))
    for old in list_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def load_latest(folder: str | Path, map_location: str | torch.device | None = "cpu") -> tuple[Path, Any] | None:
    """``(path, state)`` of the newest checkpoint in ``folder`` that loads, or ``None`` if there is none.

    A truncated or corrupt newest file is skipped (with a printed note) in favour of an older one;
    a file refused as unsafe is never skipped: that raises. Used by: notebook 07.
    """
    for path in reversed(list_checkpoints(folder)):
        try:
            return path, load_checkpoint(path, map_location)
        except UnsafeCheckpointError:
            raise
        except CheckpointError as exc:
            print(f"skipping {path.name}: {str(exc).replace(str(path), path.name)}")
    return None


def rng_state() -> dict[str, Any]:
    """Every random generator a training run draws from, as plain data that loads with ``weights_only``.

    NumPy's state is stored as lists and ints: its own tuple holds an ``ndarray``, which
    ``weights_only=True`` refuses. Used by: notebook 07.
    """
    name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {"name": str(name), "keys": keys.tolist(), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        state["mps"] = torch.mps.get_rng_state()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured. Used by: notebook 07."""
    random.setstate(state["python"])
    n = state["numpy"]
    np.random.set_state((n["name"], np.array(n["keys"], dtype=np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"].cpu())
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    if "mps" in state and getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        torch.mps.set_rng_state(state["mps"].cpu())


def training_state(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    scaler: torch.amp.GradScaler,
    step: int,
    epoch: int = 0,
) -> dict[str, Any]:
    """Everything needed to continue a run exactly: state dicts, counters and RNG states.

    ``scaler.state_dict()`` is ``{}`` for a disabled scaler (CPU runs); that is stored as is.
    Used by: notebook 07.
    """
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "step": int(step),
        "epoch": int(epoch),
        "rng": rng_state(),
    }


def restore_training_state(
    state: dict[str, Any],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    scaler: torch.amp.GradScaler,
) -> tuple[int, int]:
    """Load :func:`training_state`'s dict into freshly built objects; return ``(step, epoch)``.

    Build the model and move it to its device *before* creating the optimizer, as in a fresh
    run; the optimizer's loaded state follows its parameters' device. Used by: notebook 07.
    """
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if state["scaler"]:  # {} when the run that saved it had the scaler disabled
        scaler.load_state_dict(state["scaler"])
    set_rng_state(state["rng"])
    return state["step"], state["epoch"]
