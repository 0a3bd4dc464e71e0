"""One rule the tests share: a tool a developer's machine may lack skips the test there, but fails it
under CI, where `.ci/run` provides every tool, so no check silently stops running on CI."""
from __future__ import annotations

import os

import pytest


def missing_tool(reason: str) -> None:
    """Skip on a developer's machine when a tool is missing; under CI fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the CI machine must have it)")
    pytest.skip(reason)
