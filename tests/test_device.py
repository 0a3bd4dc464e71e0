import pytest
import torch

from course_utils import device as dev


def test_auto_picks_the_best_available():
    assert dev.pick_device("auto").type == dev.available_devices()[0]
    assert dev.available_devices()[-1] == "cpu"


def test_cpu_always_works():
    assert dev.pick_device("CPU") == torch.device("cpu")


@pytest.mark.parametrize("bad", ["tpu", "gpu", "", "auto:0", "cuda:x"])
def test_unknown_device_names_are_rejected(bad):
    with pytest.raises(ValueError, match="DEVICE must be one of"):
        dev.pick_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_missing_cuda_says_what_is_available_and_how_to_get_it():
    with pytest.raises(dev.DeviceUnavailableError) as err:
        dev.pick_device("cuda")
    msg = str(err.value)
    assert "available: ['" in msg and "'cpu'" in msg
    assert "CUDA build" in msg


def test_missing_cuda_when_simulated(monkeypatch):
    # The same path on a CUDA machine: pretend the GPU is gone.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(dev.DeviceUnavailableError, match="not available on this machine"):
        dev.pick_device("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_index_out_of_range():
    with pytest.raises(dev.DeviceUnavailableError, match="CUDA device"):
        dev.pick_device(f"cuda:{torch.cuda.device_count()}")


def test_environment_report_is_complete_and_serialisable():
    import json

    r = dev.environment_report()
    for key in ("python", "torch", "cuda_build", "cudnn", "cuda_available", "mps_available", "nccl_available", "gpus", "cpu_count"):
        assert key in r
    assert r["cuda_available"] == torch.cuda.is_available()
    assert len(r["gpus"]) == (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    json.dumps(r)


def test_driver_version_is_none_or_a_version_string():
    v = dev.nvidia_driver_version()
    assert v is None or (v[0].isdigit() and "." in v)
    if torch.cuda.is_available():
        assert v is not None, "a machine with CUDA has a driver"


def test_driver_version_without_nvml_or_nvidia_smi(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_pynvml(name, *args, **kwargs):
        if name == "pynvml":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    assert dev.nvidia_driver_version() is None


@pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
                    reason="needs torch.distributed with gloo")
def test_one_process_gloo_all_reduce_really_runs():
    dev.one_process_all_reduce("gloo")
    assert not torch.distributed.is_initialized()


def test_one_process_all_reduce_reports_a_bad_backend():
    with pytest.raises(ValueError, match="backend must be"):
        dev.one_process_all_reduce("no-such-backend")
    assert not torch.distributed.is_initialized()


@pytest.mark.skipif(not torch.cuda.is_available() or not torch.distributed.is_nccl_available(),
                    reason="needs CUDA with NCCL")
def test_one_process_nccl_all_reduce_really_runs():
    dev.one_process_all_reduce("nccl", "cuda")
    assert not torch.distributed.is_initialized()
