"""course_utils.exercises.predict: the line under a measurement that a student's guess is held to."""
from __future__ import annotations

from course_utils.exercises.predict import gap, verdict


def test_gap_is_symmetric_and_infinite_for_non_positive_guesses():
    assert gap(2, 8) == gap(32, 8) == 4
    assert gap(0, 8) == float("inf")


def test_verdict_names_the_guess_the_number_and_how_far_off():
    assert verdict(..., 47.0, unit="ms").startswith("⬜ no prediction written: this run measured 47 ms")
    assert verdict(40, 47.0, unit="ms").startswith("🎯 you predicted 40, this run measured 47 ms: within 1.5×")
    line = verdict(1, 47.0, unit="ms", why="starting work costs more")
    assert "4.7e+01" not in line and "47.0× too low. Why: starting work costs more" in line
    assert "must be a number" in verdict("fast", 47.0)


def test_an_estimate_is_not_called_a_measurement():
    line = verdict(4, 6.01, unit="GiB", found="estimated")
    assert "this run estimated 6.01 GiB" in line and "measured" not in line
