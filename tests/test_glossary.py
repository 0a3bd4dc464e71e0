"""Words a student knows: the glossary (notebooks/glossary.md, English / 中文) has every term the lessons use,
and each term is explained in plain words (the term in bold) or linked to the glossary where the course
first uses it, reading the core lessons in order. Prose only: markdown outside folded answers (<details>)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import REPO, every_notebook, lesson_notebooks

sys.path.insert(0, str(REPO / "tools"))
from lesson_stats import prose  # noqa: E402

GLOSSARY = REPO / "notebooks" / "glossary.md"
ANCHOR = re.compile(r'<a id="([a-z0-9-]+)"></a>\*\*([^*]+)\*\*')
HAN = re.compile(r"[\u4e00-\u9fff]")

# How each term shows up in prose (case-insensitive unless the pattern starts with (?-i)). Narrow where a
# word has an everyday meaning: "kernel" alone is also the Jupyter kernel, so only GPU-kernel phrasings count.
USES = {
    "host": r"\bhost\b",
    "device": r"\bdevices?\b",
    "cuda": r"(?-i:\bCUDA\b)",
    "sm": r"(?-i:\bSMs?\b)",
    "hbm": r"(?-i:\bHBM\d?e?\b)",
    "vram": r"\bVRAM\b|显存|\bGPU memory\b",
    "pcie": r"\bPCIe\b",
    "tensor-cores": r"\btensor cores?\b",
    "kernel": r"\b(?:GPU|CUDA|matmul|compute|fused) kernels?\b|\bkernels? (?:per|for each|runs?|that)\b",
    "kernel-launch": r"\bkernel launch(?:es)?\b|\blaunch(?:es|ed|ing)? (?:a |one |each |\w+ )?kernels?\b",
    "asynchronous": r"\basynchronous(?:ly)?\b",
    "sync": r"\bsynchroni[sz]\w*|\bsync(?:s|ed|ing)?\b",
    "cuda-stream": r"\b(?:CUDA|side|default) streams?\b",
    "cuda-graph": r"\bCUDA graphs?\b",
    "dispatcher": r"\bdispatcher\b",
    "autograd": r"\bautograd\b",
    "overhead": r"\boverheads?\b",
    "latency": r"\blatenc(?:y|ies)\b",
    "throughput": r"\bthroughput\b",
    "caching-allocator": r"\bcaching allocator\b",
    "flops": r"(?-i:\b[kGTP]?FLOP(?:s|/s)?\b)",
    "memory-bandwidth": r"\bbandwidth\b",
    "arithmetic-intensity": r"\barithmetic intensity\b",
    "roofline": r"\broofline\b",
    "fp32": r"\bfp32\b|\bfloat32\b",
    "fp16": r"\bfp16\b|\bfloat16\b",
    "bf16": r"\bbf16\b|\bbfloat16\b",
    "tf32": r"\bTF32\b",
    "mixed-precision": r"\bmixed precision\b|(?-i:\bAMP\b)",
    "autocast": r"\bautocast\b",
    "gradscaler": r"\bGradScaler\b",
    "epoch": r"\bepochs?\b",
    "batch": r"\bbatch(?:es)?\b",
    "activation": r"\bactivations\b",
    "optimizer-state": r"\boptimi[sz]er states?\b",
    "gradient-accumulation": r"\bgradient accumulation\b",
    "activation-checkpointing": r"\bactivation checkpointing\b",
    "training-checkpoint": r"\btraining checkpoints?\b",
    "warm-up": r"\bwarm[- ]?ups?\b",
    "median": r"\bmedians?\b",
    "iqr": r"(?-i:\bIQR\b)",
    "results-card": r"\bresults? cards?\b",
    "dataloader": r"\bDataLoaders?\b",
    "worker": r"\bworkers?\b",
    "pinned-memory": r"\bpinned\b|\bpage-locked\b",
    "non-blocking": r"\bnon[-_]blocking\b",
    "ddp": r"(?-i:\bDDP\b)|DistributedDataParallel",
    "rank": r"\branks?\b",
    "world-size": r"\bworld[ _]size\b",
    "all-reduce": r"\ball[-_ ]reduces?\b",
    "bucket": r"\bbuckets?\b",
    "backend": r"\bgloo\b|(?-i:\bNCCL\b)",
    "torchrun": r"\btorchrun\b",
    "sharding": r"\bshard(?:s|ed|ing)?\b",
    "zero": r"(?-i:\bZeRO(?:-\d)?\b)",
    "fsdp": r"(?-i:\bFSDP\d?\b)",
    "profiler": r"\bprofiler\b",
    "torch-compile": r"\btorch\.compile\b",
}


def entries() -> dict[str, str]:
    """anchor -> the bold head of its entry ("kernel (GPU kernel) · 内核（核函数）")."""
    return dict(ANCHOR.findall(GLOSSARY.read_text(encoding="utf-8")))


def _paragraphs(path: Path) -> list[str]:
    """The lesson's prose, one markdown cell each (folded answers removed)."""
    return [prose(c.source) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def _explained(anchor: str, pattern: re.Pattern, text: str) -> bool:
    """Linked to the glossary, or the term set in bold (the course's mark for "defined here")."""
    if re.search(rf"glossary\.md#{re.escape(anchor)}(?![\w-])", text):
        return True
    return any(pattern.search(bold) for bold in re.findall(r"\*\*(.+?)\*\*", text, re.S))


def first_uses(cores: list[Path]) -> dict[str, tuple[str, int, bool]]:
    """anchor -> (lesson, markdown cell number, explained there) at the term's first use in course order.
    A use in a heading is explained by the heading's cell or the next markdown cell."""
    found: dict[str, tuple[str, int, bool]] = {}
    for path in cores:
        cells = _paragraphs(path)
        for n, text in enumerate(cells):
            for anchor, raw in USES.items():
                if anchor in found:
                    continue
                pattern = re.compile(raw, re.I)
                if not pattern.search(text):
                    continue
                heading_only = all(line.startswith("#") or not line.strip() for line in text.splitlines())
                around = text + ("\n" + cells[n + 1] if heading_only and n + 1 < len(cells) else "")
                found[anchor] = (path.stem, n, _explained(anchor, pattern, around))
    return found


def test_the_glossary_is_bilingual_and_every_term_has_a_pattern():
    found = entries()
    assert len(found) >= 40, f"{len(found)} terms: the course promises at least 40"
    no_zh = [a for a, head in found.items() if not HAN.search(head) and a not in {"cuda", "bf16", "tf32", "torchrun"}]
    assert not no_zh, f"terms without their Chinese name: {no_zh}"
    assert set(USES) == set(found), (f"glossary entries without a pattern: {sorted(set(found) - set(USES))}; "
                                     f"patterns without an entry: {sorted(set(USES) - set(found))}")
    text = GLOSSARY.read_text(encoding="utf-8")
    assert 'id="loop-done-right"' in text and "torch.cuda.synchronize()" in text, "the cheat sheet is in the glossary"


def test_the_term_patterns_find_what_they_should_and_not_the_jupyter_kernel():
    kernel = re.compile(USES["kernel"], re.I)
    assert kernel.search("a matmul kernel") and kernel.search("each GPU kernel")
    assert not kernel.search("restart the kernel") and not kernel.search("the Jupyter kernel is busy")
    assert not re.search(USES["zero"], "zero gradients", re.I)
    assert re.search(USES["fp16"], "bfloat16", re.I) is None


@pytest.mark.parametrize("path", every_notebook(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_lesson_links_the_glossary(path):
    text = "\n".join(_paragraphs(path))
    want = "../glossary.md" if path.parent.name == "deeper" else "glossary.md"
    assert re.search(rf"\]\({re.escape(want)}(?:#[a-z0-9-]+)?\)", text), f"{path.name} never links {want}"


def test_every_term_is_explained_or_linked_where_the_course_first_uses_it():
    uses = first_uses(lesson_notebooks())
    bad = [f"{anchor!r}: first used in {lesson}, markdown cell {n}, neither in bold nor linked to glossary.md#{anchor}"
           for anchor, (lesson, n, ok) in uses.items() if not ok]
    assert not bad, "\n".join(bad)


def test_the_first_use_check_bites():
    """A term used plainly fails; in bold or linked it passes."""
    pattern = re.compile(USES["pcie"], re.I)
    assert not _explained("pcie", pattern, "The copy crosses PCIe.")
    assert _explained("pcie", pattern, "The copy crosses **PCIe**, the host-GPU link.")
    assert _explained("pcie", pattern, "The copy crosses [PCIe](glossary.md#pcie).")
    assert not _explained("pcie", pattern, "The copy crosses [PCIe](glossary.md#pcie-x).")
