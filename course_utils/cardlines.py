"""The GPU results cards' value of one key, for the horizontal lines lessons 04 and 05 draw on their
measured figures (a CPU run then still shows what a GPU measured). Used by: notebooks 04 and 05.
"""
from __future__ import annotations

from .ledger import gpu_card_results


def gpu_card_values(key: str) -> dict[str, float]:
    """``{card name: value}`` for every shipped GPU results card that recorded ``key`` (empty if none)."""
    return {name: ref[key].value for name, ref in gpu_card_results().items() if key in ref}


def gpu_lines(key: str) -> dict[str, float]:
    """Labels and values for the horizontal lines of a measured figure: every GPU results card
    ("card NAME"), then every published measurement of the same key ("published: DEVICE"), so that a
    CPU-only run still shows what GPUs reach, never mixing what the course measured with what it quotes."""
    from .published import figures

    lines = {f"card {name}": value for name, value in gpu_card_values(key).items()}
    lines |= {f"published: {p.device}": p.value for p in figures(key)}
    return lines


# What nvidia-smi reports as the total memory of three cards students meet, in MiB (public nvidia-smi
# transcripts: "Tesla T4 ... 0MiB / 15360MiB", "NVIDIA H200 ... 0MiB / 143771MiB"; the A100 80GB's
# 81,920 MiB: https://github.com/modal-labs/modal-client/pull/2797). The nominal "16 GB" T4 shows 15 GiB
# because ECC takes 6.25 % of its GDDR6; the "141 GB" H200 shows 140.4 GiB.
PUBLISHED_TOTAL_MIB = {"T4": 15360, "A100 80GB": 81920, "H200": 143771}


def card_memory_gib(device: object = None) -> dict[str, float]:
    """Memory lines for lesson 05's "will it fit?" figure and table, in GiB: every GPU results card's
    first GPU as measured ("card NAME"), the published nvidia-smi totals ("T4, published"), and on CUDA
    this GPU's own ``total_memory`` ("this GPU"). Plan against what a card reports, not its nominal GB."""
    from .ledger import references

    lines = {}
    for name, card in sorted(references().items()):  # read once; a CPU card has no gpus
        gpus = card.get("environment", {}).get("gpus") or []
        if gpus and gpus[0].get("memory_gib"):
            lines[f"card {name}"] = float(gpus[0]["memory_gib"])
    lines |= {f"{card}, published": mib / 1024 for card, mib in PUBLISHED_TOTAL_MIB.items()}
    if getattr(device, "type", None) == "cuda":
        import torch

        lines["this GPU"] = torch.cuda.get_device_properties(device).total_memory / 2**30
    return lines
