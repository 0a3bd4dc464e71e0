import time

import pytest
import torch

from course_utils import timing


def test_benchmark_measures_a_known_duration():
    t = timing.benchmark(lambda: time.sleep(0.002), "cpu", warmup=1, min_run_time=0.05)
    assert 0.0019 < t.median < 0.02
    assert t.calls >= 3 and t.iqr >= 0 and len(t.times) >= 1


def test_benchmark_warms_up_and_synchronises_around_every_clock_read(monkeypatch):
    calls = {"fn": 0, "sync": 0}
    monkeypatch.setattr(timing, "synchronize", lambda d: calls.__setitem__("sync", calls["sync"] + 1))

    def fn():
        calls["fn"] += 1

    t = timing.benchmark(fn, "cpu", warmup=5, min_run_time=0.01)
    assert calls["fn"] >= 5 + t.calls  # warm-up calls are not timed
    # one sync after warm-up, then one per clock read (two per timed block at least)
    assert calls["sync"] >= 1 + 2 * len(t.times)


def test_benchmark_keeps_the_thread_count():
    before = torch.get_num_threads()
    seen = []
    timing.benchmark(lambda: seen.append(torch.get_num_threads()), "cpu", warmup=0, min_run_time=0.01)
    assert set(seen) == {before}


def test_time_once_and_median_of():
    assert timing.time_once(lambda: time.sleep(0.01)) >= 0.009
    m = timing.median_of(lambda: time.sleep(0.005), repeats=3)
    assert m.calls == 3 and 0.004 < m.median < 0.05


def test_format_seconds():
    assert timing.format_seconds(2.5e-5) == "25.0 us"
    assert timing.format_seconds(0.0123) == "12.30 ms"
    assert timing.format_seconds(3.0) == "3.00 s"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_timing_includes_the_kernel_not_just_the_launch():
    a = torch.randn(4096, 4096, device="cuda")
    t = timing.benchmark(lambda: a @ a, "cuda", min_run_time=0.1)
    # 2 * 4096^3 FLOP cannot finish in < 10 us on any GPU: an unsynchronised timer would report that.
    assert t.median > 1e-5


def test_torch_threads_restores_even_after_an_error():
    before = torch.get_num_threads()
    with timing.torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with timing.torch_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=">= 1"):
            with timing.torch_threads(bad):
                pass


def test_lesson01_timer_exercise_catches_each_broken_rule():
    """The pretend GPU of exercise 01.sync_timer fails a timer that skips any one of the rules above."""
    import statistics as st

    from course_utils.exercises import Verdict, evaluate

    def timer(fn, sync, clock, warmup=3, repeats=7, *, do_warmup=True, sync_after=True, summary=st.median):
        for _ in range(warmup if do_warmup else 0):
            fn()
        sync()
        times = []
        for _ in range(repeats):
            t0 = clock()
            fn()
            if sync_after:
                sync()
            times.append(clock() - t0)
        return summary(times)

    assert evaluate("01.sync_timer", timer).verdict is Verdict.CORRECT
    for broken in ({"do_warmup": False}, {"sync_after": False}, {"summary": st.mean}):
        outcome = evaluate("01.sync_timer", lambda *a, b=broken, **k: timer(*a, **k, **b))
        assert outcome.verdict is Verdict.WRONG, broken
        assert "raised" not in outcome.message, outcome


def test_faster_verdict_says_inconclusive_when_the_spreads_overlap():
    from course_utils.timing import Timing, faster_verdict

    def t(*xs):
        return Timing("", sorted(xs)[len(xs) // 2], 0.0, list(xs), len(xs))

    clear = faster_verdict(t(1.0, 1.1, 1.2), t(3.0, 3.1, 3.2), "GPU", "CPU")
    assert clear.startswith("GPU is 2.8x faster than CPU")
    noisy = faster_verdict(t(1.0, 2.0, 3.0), t(1.5, 2.5, 3.5), "GPU", "CPU")
    assert noisy.startswith("inconclusive on this run (spread")
    assert "no spread to judge" in faster_verdict(t(1.0), t(2.0), "GPU", "CPU")


def test_relative_spread():
    from course_utils.timing import relative_spread

    assert relative_spread([1.0]) == 0.0
    assert relative_spread([1.0, 1.0, 1.0, 1.0]) == 0.0
    assert 0.5 < relative_spread([1.0, 1.5, 2.0, 2.5, 3.0]) < 1.0
