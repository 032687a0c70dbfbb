"""Test-wide settings and fixtures.

Hypothesis: on CI (`CI` set, as `.ci/run` runs) the examples are derived from each test's name
(`derandomize`), so a green main stays green for the same code; locally they are random, so
every developer run explores new inputs (and found real parser bugs that way).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import record_goldens
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


@pytest.fixture(scope="module")
def golden_dir(tmp_path_factory: pytest.TempPathFactory, kit: KitServer) -> Path:
    """The golden transcripts recorded from this module's kit (`helpers.record_goldens`): the
    replies carry its token and address, so a replay against it passes. Do not edit: copy
    (`goldens`, `goldens_here`)."""
    folder = tmp_path_factory.mktemp("goldens")
    record_goldens(kit, folder)
    return folder


@pytest.fixture
def goldens(golden_dir: Path, tmp_path: Path) -> Path:
    """A fresh copy of the module's golden transcripts that a test may edit."""
    folder = tmp_path / "transcripts"
    shutil.copytree(golden_dir, folder)
    return folder


@pytest.fixture
def goldens_here(goldens: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """That copy as `transcripts/` under the current directory (short paths in the output),
    with no token, color or terminal setting in the environment: `Path("transcripts")`."""
    monkeypatch.chdir(goldens.parent)
    for name in ("A2A_TOKEN", "NO_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    return Path("transcripts")
