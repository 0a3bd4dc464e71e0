"""The shared-server kit's logic: which GPU (or MIG slice) each student gets, and the kit's settings.

Pure functions, so that `tests/test_jupyterhub.py` checks them with an `nvidia-smi -L` listing as data,
and `jupyterhub_config.py` beside this file only wires them into JupyterHub. Run it to see, before
class, what the hub will hand out:

    python deploy/course_hub.py /srv/jupyterhub/students.txt           # the devices nvidia-smi lists
    COURSE_HUB_DEVICES=none python deploy/course_hub.py students.txt    # a CPU-only dry run

The roster (one student a line, `#` starts a comment) is the class list and the assignment at once:

    alice                 # gets the least-loaded device, in roster order (round-robin)
    bob   MIG-4b1c...     # pinned to this device (a UUID from `nvidia-smi -L`)
    carol 3               # pinned to the 4th device of the list this tool prints

Why UUIDs: `CUDA_VISIBLE_DEVICES` accepts `GPU-...` and `MIG-...` UUIDs as well as indices, and a
UUID names the same device inside a container (where the only GPU is index 0) and outside it,
whatever order the driver enumerates the GPUs in.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

# `nvidia-smi -L`: one line per GPU, then (MIG mode) one indented line per MIG device; since driver
# R470 a MIG UUID is `MIG-<uuid>`, before it `MIG-GPU-<uuid>/<gi>/<ci>` (both accepted by CUDA).
_GPU_LINE = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[^)\s]+)\)\s*$")
_MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)\s]+)\)\s*$")


@dataclass(frozen=True)
class Device:
    uuid: str   # what goes into CUDA_VISIBLE_DEVICES (and Docker's device list)
    label: str  # for people: "GPU 0 NVIDIA H200" or "GPU 0 MIG 1g.18gb device 3"


def parse_nvidia_smi_list(text: str) -> list[Device]:
    """The devices a student can be given: each MIG device of a GPU in MIG mode, else the whole GPU.

    A GPU with MIG devices is not itself usable by CUDA, so it is replaced by its slices.
    """
    gpus: list[tuple[Device, list[Device]]] = []
    for line in text.splitlines():
        if m := _GPU_LINE.match(line):
            gpus.append((Device(m.group(3), f"GPU {m.group(1)} {m.group(2)}"), []))
        elif m := _MIG_LINE.match(line):
            if not gpus:
                raise ValueError(f"nvidia-smi -L: a MIG device before any GPU line: {line.strip()!r}")
            gpu_index = gpus[-1][0].label.split()[1]
            gpus[-1][1].append(Device(m.group(3), f"GPU {gpu_index} MIG {m.group(1)} device {m.group(2)}"))
        elif line.strip():
            raise ValueError(f"nvidia-smi -L: a line this kit does not understand: {line.strip()!r}")
    return [d for gpu, migs in gpus for d in (migs or [gpu])]


def list_devices(spec: str = "auto", nvidia_smi: str | None = None) -> list[Device]:
    """`spec`: "auto" (ask nvidia-smi; none found = CPU-only), "none", or comma-separated UUIDs."""
    spec = spec.strip()
    if spec == "none":
        return []
    if spec != "auto":
        uuids = [u.strip() for u in spec.split(",") if u.strip()]
        return [Device(u, f"device {i} (from COURSE_HUB_DEVICES)") for i, u in enumerate(uuids)]
    exe = nvidia_smi or shutil.which("nvidia-smi")
    if exe is None:
        return []
    out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"`nvidia-smi -L` failed ({out.returncode}): {(out.stderr or out.stdout).strip()[:200]}"
                           " -- set COURSE_HUB_DEVICES=none for a CPU-only class")
    return parse_nvidia_smi_list(out.stdout)


_USERNAME = re.compile(r"^[a-z0-9][a-z0-9._@-]*$")


def parse_roster(text: str) -> list[tuple[str, str | None]]:
    """`username [device]` per line, in class order; the device is a UUID or an index into the list."""
    roster, seen = [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) > 2 or not _USERNAME.match(fields[0]):
            raise ValueError(f"roster line {number}: expected `username [device]` with a lower-case username, "
                             f"got {raw.strip()!r}")
        if fields[0] in seen:
            raise ValueError(f"roster line {number}: {fields[0]!r} is listed twice")
        seen.add(fields[0])
        roster.append((fields[0], fields[1] if len(fields) == 2 else None))
    return roster


def assign_devices(roster: Sequence[tuple[str, str | None]], devices: Sequence[Device]) -> dict[str, str]:
    """username -> the value of CUDA_VISIBLE_DEVICES for that student's server.

    Pinned students get their device; every other student, in roster order, the device with the fewest
    students so far (ties: the first in `devices`), which is plain round-robin when nobody is pinned.
    The same roster and device list always give the same answer. No devices: an empty dict.
    """
    uuids = [d.uuid for d in devices]
    load = dict.fromkeys(uuids, 0)
    assigned: dict[str, str] = {}
    for user, pin in roster:
        if pin is None:
            continue
        if pin.isdigit():
            if int(pin) >= len(uuids):
                raise ValueError(f"roster: {user} is pinned to device {pin}, but there are {len(uuids)} devices")
            pin = uuids[int(pin)]
        elif pin not in load:
            raise ValueError(f"roster: {user} is pinned to {pin}, which is not among the devices: {', '.join(uuids) or 'none'}")
        assigned[user] = pin
        load[pin] += 1
    if not uuids:
        return {}
    for user, pin in roster:
        if pin is None:
            best = min(uuids, key=lambda u: load[u])  # min keeps the first of equals
            assigned[user] = best
            load[best] += 1
    return {user: assigned[user] for user, _ in roster}


@dataclass(frozen=True)
class Settings:
    """The kit's knobs, all from the environment of the `jupyterhub` process (no secrets among them)."""
    roster: Path
    devices: str
    spawner: str
    image: str
    course: Path
    mem_limit: str
    cpu_limit: float
    authenticator: str
    data_dir: Path
    bind_url: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "Settings":
        def get(name: str, default: str) -> str:
            return env.get(f"COURSE_HUB_{name}", "").strip() or default

        spawner = get("SPAWNER", "docker")
        if spawner not in ("docker", "systemd"):
            raise ValueError(f"COURSE_HUB_SPAWNER={spawner!r}: expected 'docker' or 'systemd'")
        try:
            cpu = float(get("CPU_LIMIT", "2"))
        except ValueError:
            raise ValueError(f"COURSE_HUB_CPU_LIMIT={get('CPU_LIMIT', '')!r}: expected a number of cores") from None
        mem = get("MEM_LIMIT", "8G")
        if not re.fullmatch(r"\d+(\.\d+)?[KMGT]?", mem):
            raise ValueError(f"COURSE_HUB_MEM_LIMIT={mem!r}: expected bytes with an optional K, M, G or T suffix")
        data = Path(get("DATA_DIR", "/srv/jupyterhub"))
        return cls(roster=Path(get("ROSTER", str(data / "students.txt"))), devices=get("DEVICES", "auto"),
                   spawner=spawner, image=get("IMAGE", "gpu-course"), course=Path(get("COURSE", "/opt/gpu-course")),
                   mem_limit=mem, cpu_limit=cpu, authenticator=get("AUTHENTICATOR", "native"), data_dir=data,
                   bind_url=get("BIND_URL", "http://127.0.0.1:8000"))


def read_roster(path: Path) -> list[tuple[str, str | None]]:
    if not path.is_file():
        raise FileNotFoundError(f"roster {path} not found: one student a line, `username [device]` "
                                "(set COURSE_HUB_ROSTER to its path)")
    return parse_roster(path.read_text())


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    devices = list_devices(os.environ.get("COURSE_HUB_DEVICES", "auto"))
    roster = read_roster(Path(argv[0]))
    for i, d in enumerate(devices):
        print(f"device {i}: {d.uuid}  ({d.label})")
    if not devices:
        print("no GPU: every server runs on the CPU (CUDA_VISIBLE_DEVICES is left unset)")
    for user, uuid in assign_devices(roster, devices).items():
        print(f"{user:>20} -> CUDA_VISIBLE_DEVICES={uuid}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
