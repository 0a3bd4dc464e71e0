"""course_utils.memplan: the estimator (fake tensors) against real measurements (the accuracy bar of
lesson 05) -- including a measurement that shares no code with the tracker (torch.profiler's memory
events on CPU, the caching allocator on CUDA) -- and the pen-and-paper formula.

Run with ``-s`` to see the worst estimator error over all cases."""
from __future__ import annotations

import copy
import resource

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from course_utils.memplan import (
    MemoryEstimate,
    MemoryMeasurement,
    bytes_per_parameter,
    default_loss,
    estimate_training_memory,
    fake_training_step,
    formula_training_memory,
    make_optimizer,
    measure_training_memory,
)
from course_utils.memtrack import track_peak
from course_utils.models import IrisMLP

MiB = 2**20
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("name,state_per_param", [("sgd", 0), ("sgd-momentum", 4)])
def test_sgd_state(name, state_per_param):
    lin = nn.Linear(256, 256)
    lin(torch.randn(8, 256)).sum().backward()
    opt = make_optimizer(name, list(lin.parameters()))
    with track_peak("cpu") as t:
        opt.step()
    assert t.end_bytes == state_per_param * (256 * 256 + 256)


def test_tracker_agrees_with_pytorchs_private_memtracker():
    """An independent CPU check: PyTorch's own (private) MemTracker, where this torch has it."""
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except Exception:  # noqa: BLE001 - private API, absent or changed in some versions
        pytest.skip("torch.distributed._tools.mem_tracker not available")
    torch.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0), 2,
                                  enable_nested_tensor=False)
    x = torch.randn(8, 16, 64)
    ours = measure_training_memory(model, x, optimizer="adamw")
    try:
        work = copy.deepcopy(model)
        mt = MemTracker()
        mt.track_external(work)
        with mt:
            opt = torch.optim.AdamW(work.parameters(), lr=1e-3)
            mt.track_external(opt)
            default_loss(work(x)).backward()
            opt.step()
        theirs = mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"MemTracker did not run here: {e}")
    assert ours.peak_bytes == theirs


# ------------------------------------------------------------------ the estimator against measurement


class CNN(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class Blocks(nn.Module):
    """A stack of blocks, optionally with activation checkpointing inside ``forward``."""

    def __init__(self, blocks: list[nn.Module], use_checkpoint: bool) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.use_checkpoint = use_checkpoint

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return x


def make_case(name: str, ckpt: bool) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    if name.startswith("mlp"):  # the lesson's MLP: mlp-<hidden>-<batch>
        _, hidden, batch = name.split("-")
        model = IrisMLP(hidden=int(hidden))
        if ckpt:
            model = Blocks([model], True)
        return model, torch.rand(int(batch), 4)
    if name == "deep-mlp":
        blocks = [nn.Sequential(nn.Linear(512, 512), nn.GELU()) for _ in range(6)]
        return Blocks(blocks, ckpt), torch.randn(256, 512)
    if name == "transformer":
        layers = [nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, dropout=0.1) for _ in range(3)]
        return Blocks(layers, ckpt), torch.randn(8, 64, 128)
    if name == "cnn":
        model = CNN()
        if ckpt:
            model = Blocks([model.body[:4], model.body[4:]], True)
        return model, torch.randn(16, 3, 32, 32)
    raise KeyError(name)


CASES = [
    ("mlp-10-16", False, "adamw", "fp32"),
    ("mlp-256-1024", False, "adamw", "fp32"),
    ("mlp-256-1024", False, "sgd", "bf16-mixed"),
    ("mlp-4096-256", False, "adam", "fp32"),
    ("mlp-4096-2048", False, "sgd-momentum", "bf16-mixed"),
    ("mlp-4096-2048", True, "adamw", "fp32"),
    ("deep-mlp", False, "sgd", "fp32"),
    ("deep-mlp", True, "sgd", "fp32"),
    ("deep-mlp", True, "adamw", "bf16-mixed"),
    ("transformer", False, "adamw", "fp32"),
    ("transformer", False, "sgd", "bf16-mixed"),
    ("transformer", True, "sgd-momentum", "fp32"),
    ("transformer", True, "adamw", "bf16-mixed"),
    ("cnn", False, "sgd", "fp32"),
    ("cnn", False, "adamw", "bf16-mixed"),
    ("cnn", True, "sgd", "fp32"),
    ("cnn", True, "adam", "bf16-mixed"),
]
ERRORS: list[tuple[float, str]] = []


@pytest.fixture(scope="module", autouse=True)
def report_worst_error():
    yield
    if ERRORS:
        worst = max(ERRORS, key=lambda e: abs(e[0]))
        print(f"\nestimator vs measurement: worst error {worst[0]:+.3f} % ({worst[1]}) over {len(ERRORS)} cases")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ckpt,optimizer,precision", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_estimate_matches_measurement(name, ckpt, optimizer, precision, device):
    model, x = make_case(name, ckpt)
    model, x = model.to(device), x.to(device)
    est = estimate_training_memory(model, x, optimizer=optimizer, precision=precision)
    real = measure_training_memory(model, x, optimizer=optimizer, precision=precision)
    assert isinstance(est, MemoryEstimate) and isinstance(real, MemoryMeasurement)
    err = est.total_bytes - real.peak_bytes
    ERRORS.append((100 * err / real.peak_bytes, f"{device} {name} ckpt={ckpt} {optimizer} {precision}"))
    if device == "cpu":  # the same tracker on both sides: fake and real steps must create the same tensors
        assert abs(err) <= max(0.01 * real.peak_bytes, 1024), (est, real)
    else:  # CUDA's allocator also counts kernel workspaces the estimate cannot see
        assert abs(err) <= max(0.10 * real.peak_bytes, MiB), (est, real)
    assert est.parameters == real.parameters
    parts = est.breakdown()
    assert all(v >= 0 for v in parts.values()) and sum(parts.values()) == est.total_bytes


def test_checkpointing_lowers_the_estimate():
    plain = estimate_training_memory(*make_case("deep-mlp", False), optimizer="sgd")
    ckpt = estimate_training_memory(*make_case("deep-mlp", True), optimizer="sgd")
    assert ckpt.total_bytes < plain.total_bytes
    assert ckpt.parameters == plain.parameters


def test_adamw_state_is_twice_the_parameters():
    model, x = make_case("mlp-256-1024", False)
    est = estimate_training_memory(model, x, optimizer="adamw")
    weights = sum(p.numel() * 4 for p in model.parameters())
    steps = 4 * len(list(model.parameters()))  # one float32 step counter per tensor
    assert est.optimizer_state_total == 2 * weights + steps
    assert est.gradients_total == weights


def test_estimate_allocates_no_real_memory_for_a_large_meta_model():
    with torch.device("meta"):
        model = nn.Sequential(*[nn.Linear(8192, 8192) for _ in range(16)])  # 1.07 B parameters, 4.3 GB in fp32
    x = torch.zeros(4, 8192, device="meta")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with track_peak("cpu") as t:
        est = estimate_training_memory(model, x, optimizer="adamw", device="cpu")
    rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    n = sum(p.numel() for p in model.parameters())
    assert est.total_bytes >= 16 * n  # weights, gradients and two moments: 16 bytes per parameter
    assert t.peak_bytes == 0  # no CPU tensor memory was used...
    assert rss_growth_kib < 512 * 1024  # ...and the process did not grow by the model's gigabytes
    assert est.peak_phase == "optimizer"


def test_measure_leaves_the_model_unchanged_and_accepts_tuples_and_dicts():
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x, y):
            return self.a(x) + self.b(y)

    model = Two()
    before = copy.deepcopy(model.state_dict())
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    m1 = measure_training_memory(model, (x, y))
    m2 = measure_training_memory(model, {"x": x, "y": y})
    e1 = estimate_training_memory(model, (x, y))
    assert m1.peak_bytes == m2.peak_bytes and abs(e1.total_bytes - m1.peak_bytes) <= MiB
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_custom_loss_and_default_loss_in_fp32():
    out = torch.randn(4, 3, dtype=torch.bfloat16)
    assert default_loss(out).dtype == torch.float32
    model, x = make_case("mlp-10-16", False)
    est = estimate_training_memory(model, x, loss_fn=lambda o: o.sum())
    assert est.total_bytes > 0


@pytest.mark.parametrize("fn", [estimate_training_memory, measure_training_memory])
def test_unknown_choices_raise_clear_errors(fn):
    model, x = make_case("mlp-10-16", False)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        fn(model, x, optimizer="lion")
    with pytest.raises(ValueError, match="precision must be one of"):
        fn(model, x, precision="fp16")


# ------------------------------------------------------------------ the formula


@pytest.mark.parametrize(
    "optimizer,precision,total",
    [("adamw", "fp32", 16), ("adam", "fp32", 16), ("adamw", "bf16-mixed", 16), ("sgd", "fp32", 8),
     ("sgd-momentum", "fp32", 12), ("sgd", "bf16-mixed", 8), ("sgd-momentum", "bf16-mixed", 12)],
)
def test_bytes_per_parameter(optimizer, precision, total):
    assert sum(bytes_per_parameter(optimizer, precision).values()) == total


def test_formula():
    f = formula_training_memory(1_000_000, optimizer="adamw", precision="bf16-mixed", activation_bytes=123)
    assert (f.parameters, f.gradients, f.optimizer_state) == (2_000_000, 2_000_000, 12_000_000)
    assert f.total_bytes == 16_000_123 and f.method == "formula"
    assert formula_training_memory(IrisMLP()).total_bytes == 16 * (4 * 10 + 10 + 10 * 3 + 3)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        formula_training_memory(10, optimizer="rmsprop")
    with pytest.raises(ValueError):
        formula_training_memory(-1)


@pytest.mark.parametrize("device", DEVICES)
def test_tied_embeddings_integer_inputs_frozen_layers_and_tuple_outputs(device):
    class TinyLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(1000, 64)
            self.frozen = nn.Linear(64, 64)
            self.frozen.requires_grad_(False)
            self.layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
            self.head = nn.Linear(64, 1000, bias=False)
            self.head.weight = self.tok.weight  # tied: one storage, counted once

        def forward(self, ids):
            h = self.layer(self.frozen(self.tok(ids)))
            return self.head(h), h.mean()  # a tuple: the default loss sums both

    torch.manual_seed(0)
    model = TinyLM().to(device)
    ids = torch.randint(0, 1000, (4, 32), device=device)
    for precision in ("fp32", "bf16-mixed"):
        est = estimate_training_memory(model, ids, optimizer="adamw", precision=precision)
        real = measure_training_memory(model, ids, optimizer="adamw", precision=precision)
        err = est.total_bytes - real.peak_bytes
        ERRORS.append((100 * err / real.peak_bytes, f"{device} tiny-lm {precision}"))
        bar = max(0.01 * real.peak_bytes, 1024) if device == "cpu" else max(0.10 * real.peak_bytes, MiB)
        assert abs(err) <= bar, (est, real)  # CPU: same tracker both sides; CUDA: the allocator adds workspaces
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)  # the tied weight once
    assert est.gradients_total == 4 * trainable


# ------------------------------------------------------------------ an independent measurement


@pytest.mark.parametrize("name,ckpt,optimizer,precision", [
    ("mlp-256-1024", False, "adamw", "fp32"),
    ("transformer", False, "sgd", "bf16-mixed"),
    ("transformer", True, "adamw", "bf16-mixed"),
    ("cnn", True, "adam", "bf16-mixed"),
])
def test_estimate_matches_the_profilers_allocator_events(name, ckpt, optimizer, precision):
    """On a CPU the real step's default measurement uses the estimator's own tracker, so agreement there
    shows fake-vs-real consistency only. torch.profiler's memory events come from the CPU allocator
    itself (kernel scratch included): an independent check of the estimate."""
    model, x = make_case(name, ckpt)
    est = estimate_training_memory(model, x, optimizer=optimizer, precision=precision)
    tracked = measure_training_memory(model, x, optimizer=optimizer, precision=precision, method="tracker")
    profiled = measure_training_memory(model, x, optimizer=optimizer, precision=precision, method="profiler")
    assert profiled.method == "profiler" and tracked.method == "dispatch-tracker"
    # torch 2.13 CPU: at most 1.7 % apart (a checkpointed bf16 transformer); kernel scratch the estimate cannot see
    assert abs(est.total_bytes - profiled.peak_bytes) <= max(0.05 * profiled.peak_bytes, 64 * 1024), (est, profiled)
    assert profiled.peak_bytes >= 0.99 * tracked.peak_bytes  # the allocator sees at least the operator outputs


def test_measure_methods_are_checked():
    model, x = make_case("mlp-10-16", False)
    with pytest.raises(ValueError, match="method must be"):
        measure_training_memory(model, x, method="nvidia-smi")
    with pytest.raises(ValueError, match="CUDA only"):
        measure_training_memory(model, x, method="allocator")


def test_the_estimators_core_is_a_short_function():
    """fake_training_step is the estimator's core (lesson 05 writes it out as fake_step_peak): short to read."""
    import inspect

    assert len(inspect.getsource(fake_training_step).splitlines()) <= 30
    model, x = make_case("mlp-256-1024", False)
    step = fake_training_step(model, x, optimizer="adamw", precision="fp32", device=torch.device("cpu"))
    try:
        assert [phase for phase, _ in step.phases] == ["forward", "backward", "optimizer", "done"]
        assert step.tracker.peak == estimate_training_memory(model, x).total_bytes - 4 * sum(
            p.numel() for p in model.parameters()) - x.numel() * 4
    finally:
        step.tracker.close()
