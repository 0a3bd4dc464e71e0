"""Saving and resuming training state without losing it (notebook 07).

The rules, one function each:

* :func:`atomic_save` writes through :func:`course_utils.atomic.atomic_write` (a temporary file in
  the same folder, fsync, ``os.replace``): a crash or a full disk mid-write never leaves half a
  checkpoint under the real name. It also stores a SHA-256 of the file inside the file.
* :func:`load_checkpoint` verifies that digest, then loads with ``weights_only=True`` (a checkpoint
  is data, not code). A damaged file is a :class:`CheckpointError` that names the file and says
  why; :class:`UnsafeCheckpointError` is kept for files that ask for a global (a class or a
  function) the safe unpickler refuses.
* :func:`save_checkpoint` keeps the newest ``keep`` checkpoints up to the one it saved, never
  that one; :func:`load_latest` resumes from the newest one that loads and is intact.

The digest sits in the comment field of the zip archive that ``torch.save`` writes (the standard
place for free text at the end of a zip file), so a checkpoint stays one file, renamed into place
in one step, and plain ``torch.load`` still reads it. It covers every byte ``torch.save`` wrote:
one flipped bit in a tensor is caught (``torch.load`` itself does not check, it loads the wrong
number). It detects damage (a bad disk, a broken copy), not tampering: whoever can rewrite the
file can rewrite the digest. A file without a digest (saved by plain ``torch.save`` or before
digests were added) still loads, with a :class:`CheckpointWarning` that it could not be verified.

:func:`training_state` / :func:`restore_training_state` say what goes into a training checkpoint:
model, optimizer, LR scheduler, GradScaler, step and every random generator.
"""
from __future__ import annotations

import hashlib
import numbers
import pickle
import random
import re
import warnings
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np
import torch

from .atomic import atomic_write

PREFIX = "ckpt_"
SUFFIX = ".pt"
DIGEST_TAG = b"course_utils sha256:"  # the zip comment is this tag + 64 hex digits
_FOOTER = len(DIGEST_TAG) + 64
_EOCD = 22  # size of a zip's end-of-central-directory record without its comment
_EOCD_SIGNATURE = b"PK\x05\x06"
_ZIP_MAGIC = b"PK\x03\x04"


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, unreadable, truncated, corrupt, or refused by ``weights_only``."""


class UnsafeCheckpointError(CheckpointError):
    """``weights_only=True`` refused a global (a class or function) that is not allow-listed.

    Its message names that global. :func:`load_latest` never skips such a file: it raises.
    """


class CheckpointWarning(UserWarning):
    """Something a resumed run should know about but that does not stop it (e.g. no digest to verify)."""


class _HashingWriter:
    """Passes ``torch.save``'s writes on to ``f``, hashing them and keeping the last bytes (the zip's
    end record) and the first ``OSError``: ``torch.save`` replaces that with a vague RuntimeError."""

    def __init__(self, f: Any) -> None:
        self.f, self.sha, self.tail, self.error = f, hashlib.sha256(), b"", None

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha.update(view)
        self.tail = (self.tail + view[-_EOCD:].tobytes())[-_EOCD:]
        try:
            return self.f.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        self.f.flush()


def atomic_save(obj: Any, path: str | Path, *, wrap: Callable[[BinaryIO], Any] | None = None) -> Path:
    """``torch.save(obj)`` to ``path`` atomically, with a SHA-256 of the file stored in the file.

    Readers see the old file or the new one, never a mix. If the process dies mid-write only a
    hidden ``.<name>.*.tmp`` file is left behind; a failed write (a full disk) removes it and raises
    ``OSError`` naming the file. ``wrap`` wraps the open temporary file (notebook 07 and the tests
    use it to stop a writer half-way). Used by: notebooks 07 and 09, and lesson eleven's script
    (course_utils/fsdp_train.py).
    """
    return atomic_write(path, lambda f: _save_with_digest(obj, f, wrap))


def _save_with_digest(obj: Any, f: BinaryIO, wrap: Callable[[BinaryIO], Any] | None) -> None:
    """``torch.save`` into ``f`` through a hashing writer, then put the digest in the zip comment."""
    writer = _HashingWriter(wrap(f) if wrap else f)
    try:
        torch.save(obj, writer)
    except Exception as exc:
        if writer.error is not None:  # the disk's own error says more than torch's "unexpected pos"
            raise writer.error from exc
        raise
    if writer.tail[:4] != _EOCD_SIGNATURE or writer.tail[-2:] != b"\0\0":
        warnings.warn(f"{getattr(f, 'name', 'checkpoint')}: torch.save did not end with a plain zip end "
                      "record; saved without a digest", CheckpointWarning, stacklevel=3)
        return
    f.seek(-2, 2)  # the comment length, then the comment: the last fields of the zip
    f.write(_FOOTER.to_bytes(2, "little") + DIGEST_TAG + writer.sha.hexdigest().encode())


def stored_digest(path: str | Path) -> str | None:
    """The SHA-256 (hex) that :func:`atomic_save` stored in ``path``, or ``None`` if it has none.

    Raises :class:`CheckpointError` when the zip's end record announces our digest but the file
    stops before its end (cut off in the last bytes: ``torch.load`` would not notice).
    """
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - _EOCD - _FOOTER))
        tail = f.read()
    at = tail.rfind(_EOCD_SIGNATURE)
    if at < 0 or len(tail) - at < _EOCD or tail[at + _EOCD - 2:at + _EOCD] != _FOOTER.to_bytes(2, "little"):
        return None
    comment = tail[at + _EOCD:]
    if len(comment) != _FOOTER:
        raise CheckpointError(f"{path} is truncated or corrupt ({size} bytes): its last {_FOOTER} bytes "
                              f"should hold the SHA-256 digest, {len(comment)} are there")
    return comment[len(DIGEST_TAG):].decode("ascii", "replace") if comment.startswith(DIGEST_TAG) else None


def computed_digest(path: str | Path) -> str:
    """SHA-256 of what ``torch.save`` wrote: the file without its comment, comment length 0."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        remaining = f.seek(0, 2) - _FOOTER - 2
        f.seek(0)
        while remaining > 0:
            chunk = f.read(min(remaining, 1 << 20))
            if not chunk:
                break
            sha.update(chunk)
            remaining -= len(chunk)
    sha.update(b"\0\0")
    return sha.hexdigest()


def verify_checkpoint(path: str | Path) -> bool:
    """``True`` if ``path``'s stored digest matches its content, ``False`` if it has no digest.

    Raises :class:`CheckpointError` on a mismatch: the file changed after it was saved.
    """
    stored = stored_digest(path)
    if stored is None:
        return False
    actual = computed_digest(path)
    if actual != stored:
        raise CheckpointError(f"{path} is corrupt: its content does not match the SHA-256 stored when it was "
                              f"saved (stored {stored[:12]}..., now {actual[:12]}...); it changed on disk")
    return True


def load_checkpoint(path: str | Path, map_location: str | torch.device | None = "cpu") -> Any:
    """Verify ``path``'s digest, then ``torch.load(path, weights_only=True)``, with errors that say
    what is wrong with which file.

    Raises :class:`CheckpointError` for a missing, unreadable, empty, truncated, corrupt or foreign
    file, and :class:`UnsafeCheckpointError` when the file needs a global that is not allow-listed
    (allow a class you trust with ``torch.serialization.safe_globals([cls])``). A file without a
    digest loads with a :class:`CheckpointWarning`. Used by: notebook 07.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: " + ("not a file" if path.exists() else "no such checkpoint file"))
    try:
        verified = verify_checkpoint(path)
        _check_header(path)
    except OSError as exc:
        raise CheckpointError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    state = _torch_load(path, map_location)
    if not verified:
        warnings.warn(f"{path} has no SHA-256 digest (plain torch.save, or saved before digests were added): "
                      "loaded without an integrity check", CheckpointWarning, stacklevel=2)
    return state


def _check_header(path: Path) -> None:
    """Refuse what is neither a zip (``torch.save``'s format) nor a pickle (its legacy format) before
    the unpickler reads it: random bytes get a clear reason instead of an opcode error."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head == _ZIP_MAGIC or (len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5):
        return
    if len(head) < 4 and _ZIP_MAGIC.startswith(head):
        return  # a zip cut off after a few bytes: let torch.load call it truncated
    raise CheckpointError(f"{path} is not a PyTorch checkpoint ({path.stat().st_size} bytes starting with "
                          f"{head.hex(' ')}; torch.save files start with a zip header, 50 4b 03 04)")


_UNSAFE = re.compile(r"GLOBAL ([A-Za-z_][\w.]*) (?:was not an allowed global|whose module \S+ is blocked)")


def _torch_load(path: Path, map_location: str | torch.device | None) -> Any:
    """``torch.load(weights_only=True)``; every failure becomes a :class:`CheckpointError`."""
    size = path.stat().st_size
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        unsafe = _UNSAFE.search(str(exc))
        if unsafe:
            raise UnsafeCheckpointError(
                f"{path}: refused by torch.load(weights_only=True): it needs the global {unsafe.group(1)}, "
                "which is not allow-listed") from exc
        raise CheckpointError(f"{path} is corrupt ({size} bytes): {_reason(exc)}") from exc
    except (EOFError, OSError) as exc:
        raise CheckpointError(f"{path} is truncated or corrupt ({size} bytes); was its save interrupted? "
                              f"({_reason(exc)})") from exc
    except Exception as exc:  # noqa: BLE001 - a damaged file can fail in any layer of the loader
        first = _reason(exc)
        if any(w in first.lower() for w in ("zip", "archive", "stream")):
            raise CheckpointError(f"{path} is truncated or corrupt ({size} bytes); was its save interrupted? "
                                  f"({first})") from exc
        raise CheckpointError(f"{path} could not be loaded: {_reason(exc, with_type=True)}") from exc


def _reason(exc: BaseException, with_type: bool = False) -> str:
    """The informative first line of a loader error (torch wraps the unpickler's reason in advice)."""
    text = str(exc).strip()
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1].strip()
    first = text.splitlines()[0].split(". ")[0][:160] if text else ""
    if not first or with_type:
        return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return first


def checkpoint_path(folder: str | Path, step: int) -> Path:
    """``folder/ckpt_<step, 8 digits>.pt``: names sort in step order."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ValueError(f"a checkpoint step is an integer >= 0, got {step!r}")  # else load_latest never finds it
    return Path(folder) / f"{PREFIX}{int(step):08d}{SUFFIX}"


def step_of(path: Path) -> int:
    """The step a checkpoint's file name stands for (``ckpt_00000040.pt`` -> 40)."""
    return int(path.stem[len(PREFIX):])


def list_checkpoints(folder: str | Path) -> list[Path]:
    """The run's checkpoints, oldest first (temporary files of interrupted saves are not listed).

    Used by: notebook 07.
    """
    found = [p for p in Path(folder).glob(f"{PREFIX}*{SUFFIX}") if p.stem[len(PREFIX):].isdigit()]
    return sorted(found, key=step_of)


def save_checkpoint(state: Any, folder: str | Path, step: int, keep: int = 3) -> Path:
    """Atomically save ``state`` as the checkpoint of ``step``, then rotate: keep it and the
    ``keep - 1`` newest older ones, delete the rest of the older ones.

    Rotation runs only after the new file is safely in place, so there are never fewer than
    ``min(keep, saved so far)`` complete checkpoints. The file just saved is never deleted, and
    neither are checkpoints of *later* steps (left by another run into the same folder): they are
    not this run's to judge, so a :class:`CheckpointWarning` names them instead, because
    :func:`load_latest` would resume from them. Used by: notebook 07.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    path = atomic_save(state, checkpoint_path(folder, step))
    found = list_checkpoints(folder)
    newer = [p.name for p in found if step_of(p) > step]
    if newer:
        warnings.warn(f"saved {path.name}, but {path.parent} also holds later steps ({', '.join(newer)}), "
                      "which load_latest would resume from: left in place; use a fresh folder per run, or "
                      "remove them", CheckpointWarning, stacklevel=2)
    older = [p for p in found if step_of(p) < step]
    for old in older[:max(0, len(older) - (keep - 1))]:
        old.unlink(missing_ok=True)
    return path


def load_latest(folder: str | Path, map_location: str | torch.device | None = "cpu") -> tuple[Path, Any] | None:
    """``(path, state)`` of the newest checkpoint in ``folder`` that loads, or ``None`` if there is none.

    A newest file that is unreadable, truncated, corrupt (its SHA-256 does not match) or not a
    checkpoint at all is skipped in favour of an older one, with a printed note that names it and
    says why. A file refused as unsafe is never skipped: that raises. Used by: notebook 07.
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
    ``weights_only=True`` refuses. (Notebook 07's training script writes its own, shorter version.)
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
    """Restore what :func:`rng_state` captured (GPUs beyond those visible are left out, with a warning)."""
    random.setstate(state["python"])
    n = state["numpy"]
    np.random.set_state((n["name"], np.array(n["keys"], dtype=np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"].cpu())
    if state.get("cuda"):
        restore_cuda_rng_states(state["cuda"])
    if "mps" in state and getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        torch.mps.set_rng_state(state["mps"].cpu())


def cuda_states_that_fit(states: list[torch.Tensor], visible: int) -> tuple[list[torch.Tensor], int]:
    """``(states for GPUs 0..visible-1, how many do not fit)``: a run saved on 8 GPUs and resumed
    where fewer are visible (another node, ``CUDA_VISIBLE_DEVICES``) can set only those."""
    return list(states[:visible]), max(0, len(states) - visible)


def restore_cuda_rng_states(states: list[torch.Tensor]) -> int:
    """Set each visible GPU's generator from ``states`` and return how many were set.

    ``torch.cuda.set_rng_state_all`` fails with "invalid device ordinal" when the list is longer
    than the GPUs visible; this restores what fits and warns about the rest (the run continues,
    but it no longer draws exactly what the saved run would have drawn on those GPUs).
    """
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    fit, left_out = cuda_states_that_fit(states, visible)
    for index, s in enumerate(fit):
        torch.cuda.set_rng_state(s.cpu(), index)
    if left_out:
        warnings.warn(f"the checkpoint holds {len(states)} CUDA generator states, {visible} GPU(s) are visible: "
                      f"restored {len(fit)}, left out {left_out}; random draws on those GPUs will differ "
                      "from the saved run's", CheckpointWarning, stacklevel=3)
    return len(fit)


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
    (Notebook 07 writes its own in its training script.)
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
    run; the optimizer's loaded state follows its parameters' device. (Notebook 07 writes this loop
    itself, in its training script.)
    """
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if state["scaler"]:  # {} when the run that saved it had the scaler disabled
        scaler.load_state_dict(state["scaler"])
    set_rng_state(state["rng"])
    return state["step"], state["epoch"]
