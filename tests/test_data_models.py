import torch

from course_utils.data import load_iris
from course_utils.models import IrisMLP, count_parameters


def test_iris_split_is_80_20_scaled_and_deterministic():
    a, b = load_iris(), load_iris()
    assert a.X_train.shape == (120, 4) and a.X_test.shape == (30, 4)
    assert a.X_train.dtype == torch.float32 and a.y_train.dtype == torch.int64
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.y_test, b.y_test)
    # MinMax scaling is fitted on the training part: exactly [0, 1] there, roughly there on test.
    assert a.X_train.min() == 0 and a.X_train.max() == 1
    assert a.X_test.min() > -0.5 and a.X_test.max() < 1.5
    assert set(a.y_train.tolist()) == {0, 1, 2}
    assert a.class_names == ["setosa", "versicolor", "virginica"]


def test_another_seed_gives_another_split():
    assert not torch.equal(load_iris(seed=1).X_train, load_iris(seed=42).X_train)


def test_split_moves_to_a_device_as_copies():
    s = load_iris("cpu")
    t = s.to("cpu")
    assert t.X_train.device.type == "cpu" and t is not s


def test_iris_mlp_shape_and_parameter_count():
    m = IrisMLP()
    assert m(torch.zeros(5, 4)).shape == (5, 3)
    assert count_parameters(m) == 4 * 10 + 10 + 10 * 3 + 3
    assert count_parameters(IrisMLP(hidden=64)) == 4 * 64 + 64 + 64 * 3 + 3
