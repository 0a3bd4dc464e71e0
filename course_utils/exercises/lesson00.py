"""Lesson 00's exercises. The core: choosing a device in plain PyTorch, a flag that said yes while a test
failed, and why a CUDA build may see no GPU. The deeper notebook: what a compute capability allows and which
CUDA wheel fits a machine. The code exercises are judged on machines the student never sees."""
from __future__ import annotations

from typing import Any
from unittest import mock

import torch

from ..i18n import t
from .core import exercise

# (compute capability) -> (Tensor Cores, bf16 Tensor Cores, kernels in the CUDA 13 wheels), lesson 00 section 1/3
_GPUS = {(5, 2): (False, False, False), (6, 1): (False, False, False), (7, 0): (True, False, False),
         (7, 2): (True, False, False), (7, 5): (True, False, True), (8, 0): (True, True, True),
         (8, 6): (True, True, True), (8, 9): (True, True, True), (9, 0): (True, True, True),
         (10, 0): (True, True, True), (12, 0): (True, True, True)}


def _feature_names() -> tuple[str, str, str]:
    """The three features of ``_GPUS``, in order, in the lesson's language."""
    return t("Tensor Cores"), t("bf16 Tensor Cores"), t("kernels in the CUDA 13 wheels")


def _gpu_features(cc: tuple[int, int]) -> tuple[bool, bool, bool]:
    return cc >= (7, 0), cc >= (8, 0), cc >= (7, 5)


@exercise("00.gpu_features", kind="code", right=lambda: _gpu_features,
          wrong=lambda: lambda cc: (cc >= (7, 5), cc >= (8, 0), cc >= (7, 5)))
def _features(answer: Any, **context: Any) -> str | None:
    for cc, want in _GPUS.items():
        got = answer(cc)
        if not isinstance(got, tuple) or len(got) != 3:
            return t("return a tuple of three booleans, e.g. (True, False, True); for {cc} you returned {got!r}",
                     cc=cc, got=got)
        for name, g, w in zip(_feature_names(), got, want):
            if bool(g) != w:
                return t("for compute capability {major}.{minor} your function says {name}: {says}. "
                         "Reread section 2 (compute capability) and section 3: which "
                         "architecture introduced that feature, and which is the oldest the CUDA 13 wheels support?",
                         major=cc[0], minor=cc[1], name=name, says=bool(g))
    return None


def _pick_wheel(driver_major: int | None, cc: tuple[int, int]) -> str:
    """The newest stable PyTorch 2.13 Linux x86_64 build (RELEASE.md): cu130 needs R580 and 7.5+,
    cu126 needs R525 and has kernels from Maxwell 5.0 to Hopper 9.0 (none for Blackwell)."""
    if driver_major is None or driver_major < 525:
        return "cpu"
    if driver_major >= 580 and cc >= (7, 5):
        return "cu130"
    if cc > (9, 0):  # Blackwell on R570-R579: cu130 needs R580, cu126 has no kernels for it
        return "cpu"
    return "cu126"


# (driver major or None, compute capability): the machines the judge asks about. The Blackwell GPUs
# (10.0, 12.0) also come with R570/R575 drivers (review 00-2): neither GPU build of 2.13 runs there.
_MACHINES = [(None, (8, 0)), (470, (8, 6)), (525, (7, 0)), (535, (8, 0)), (570, (9, 0)), (575, (7, 5)),
             (580, (7, 0)), (580, (7, 5)), (590, (9, 0)), (595, (12, 0)), (610, (7, 0)), (570, (12, 0)),
             (575, (10, 0))]


@exercise("00.pick_wheel", kind="code", right=lambda: _pick_wheel,
          wrong=lambda: lambda driver, cc: "cpu" if driver is None or driver < 525 else
          ("cu130" if driver >= 580 else "cu126"))
def _wheel(answer: Any, **context: Any) -> str | None:
    for driver, cc in _MACHINES:
        got, want = answer(driver, cc), _pick_wheel(driver, cc)
        if got != want:
            who = t("no NVIDIA driver") if driver is None else t("driver R{driver}", driver=driver)
            return t("a machine with {who} and a GPU of compute capability {major}.{minor}: you picked {got!r}. "
                     "A wheel needs both a driver new enough for its CUDA runtime and kernels for the GPU's "
                     "architecture: reread section 3 (driver minimums, and which build dropped which GPUs). "
                     "When no GPU build fits, the answer is 'cpu' (or a newer driver).",
                     who=who, major=cc[0], minor=cc[1], got=got)
    return None


_CAUSES = {  # the choices the lesson lists (only the letters are judged)
    "a": t("no CUDA toolkit is installed on the system"),
    "b": t("the NVIDIA driver is older than the R580 series"),
    "c": t("PyTorch was installed without a GPU, so it is a +cpu build"),
}


@exercise("00.no_gpu_cause", right=lambda: "b", wrong=lambda: "a")
def _cause(answer: Any, **context: Any) -> str | None:
    choice = str(answer).strip().lower().strip("()")
    if choice == "b":
        return None
    if choice == "a":
        return t("a CUDA build of PyTorch brings its own CUDA runtime (on Linux as `nvidia-*` pip packages installed "
                 "with it), so a system-wide toolkit is not needed to run it (section 1, `cuda_build`). What on the "
                 "system must match that runtime?")
    if choice == "c":
        return t("a +cpu build reports torch.version.cuda as None, but this one says '13.0': it *is* a CUDA build. "
                 "What else must the system provide for it?")
    return t("answer with one letter, one of {letters}", letters=sorted(_CAUSES))


# --- the core's exercises ---------------------------------------------------------------------------

def _choose_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _choose_device_no_mps() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


# (cuda available, mps available) -> the device a script should pick
_PRETEND = [((True, False), "cuda"), ((False, True), "mps"), ((False, False), "cpu"), ((True, True), "cuda")]


@exercise("00.choose_device", kind="code", right=lambda: _choose_device, wrong=lambda: _choose_device_no_mps)
def _choose(answer: Any, **context: Any) -> str | None:
    if not callable(answer):
        return t("choose_device should be a function (def choose_device(): ...), not a {kind}",
                 kind=type(answer).__name__)
    for (cuda, mps), want in _PRETEND:
        with mock.patch.object(torch.cuda, "is_available", lambda: cuda), \
                mock.patch.object(torch.backends.mps, "is_available", lambda: mps):
            got = answer()
        machine = t("a pretend machine where cuda {cuda_is} and mps {mps_is}",
                    cuda_is=t("is available") if cuda else t("is not available"),
                    mps_is=t("is available") if mps else t("is not available"))
        if isinstance(got, str):
            return t("on {machine} you returned the string {got!r}: return a torch.device, e.g. torch.device({got!r})",
                     machine=machine, got=got)
        if not isinstance(got, torch.device):
            return t("on {machine} you returned {got!r}: return a torch.device", machine=machine, got=got)
        if got.type != want:
            return t("on {machine} you picked {picked!r}. Ask torch.cuda.is_available() first, then "
                     "torch.backends.mps.is_available(), and fall back to the CPU; ask inside the function, "
                     "so the answer follows the machine it runs on.", machine=machine, picked=got.type)
    return None


_FLAG_VS_TEST = {  # the choices the lesson lists (only the letters are judged)
    "a": t("the NVIDIA driver is too old"),
    "b": t("this PyTorch build has no kernels for that GPU's generation"),
    "c": t("no CUDA toolkit is installed on the system"),
}


@exercise("00.flag_vs_test", right=lambda: "b", wrong=lambda: "c")
def _flag_vs_test(answer: Any, **context: Any) -> str | None:
    choice = str(answer).strip().lower().strip("()")
    if choice == "b":
        return None
    if choice == "a":
        return t("with a driver too old for the build's CUDA runtime, torch.cuda.is_available() says False "
                 "(Exercise 3). Here the flag said True: the driver works. What did the flag not check?")
    if choice == "c":
        return t("PyTorch brings its own CUDA runtime (section 1): running it needs no toolkit. The error names "
                 "a missing 'kernel image': whose kernels are they, and for which GPUs were they built?")
    return t("answer with one letter, one of {letters}", letters=sorted(_FLAG_VS_TEST))
