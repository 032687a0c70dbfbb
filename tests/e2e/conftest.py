"""Fixtures of the install checks: the package index (skip when it cannot be reached), the
wheel built once per session, a fresh venv with the user's agent stack per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from installs import Background, build_wheel, index_problem, user_venv


@pytest.fixture(scope="session")
def index_reachable(tmp_path_factory: pytest.TempPathFactory) -> None:
    problem = index_problem(tmp_path_factory.mktemp("index-probe"))
    if problem is not None:
        pytest.skip(problem)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory, index_reachable: None) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def fresh_venv(tmp_path: Path, index_reachable: None) -> Path:
    return user_venv(tmp_path / "venv")


@pytest.fixture
def processes() -> Iterator[list[Background]]:
    """Processes a test starts; killed at its end if still running."""
    started: list[Background] = []
    yield started
    for process in reversed(started):
        process.close()
