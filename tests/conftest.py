"""Test-wide settings and fixtures.

Hypothesis: on CI (`CI` set, as `.ci/run` runs) the examples are derived from each test's name
(`derandomize`), so a green main stays green for the same code; locally they are random, so
every developer run explores new inputs (and found real parser bugs that way).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from recorder.kit import KitServer, start_kit

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="module")
def kit() -> Iterator[KitServer]:
    """The kit agent on a free loopback port, one per test module that asks for it."""
    with start_kit() as server:
        yield server
