"""`pytest --recorder-html-report FILE`: the plugin's HTML report, with pytester against the
real kit, in one process and under pytest-xdist (the workers' records reach the controller)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import edit, record_goldens

from recorder.kit import KitServer

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def golden_dir(tmp_path_factory: pytest.TempPathFactory, kit: KitServer) -> Path:
    folder = tmp_path_factory.mktemp("plugin-goldens")
    record_goldens(kit, folder)
    return folder


@pytest.fixture
def project(
    pytester: pytest.Pytester, golden_dir: Path, kit: KitServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    shutil.copytree(golden_dir, pytester.path / "transcripts")
    monkeypatch.setenv("A2A_TOKEN", kit.token)
    edit(
        pytester.path / "transcripts" / "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
    )
    return pytester


def page_data(path: Path) -> dict:  # type: ignore[type-arg]
    text = path.read_text(encoding="utf-8")
    match = re.search(r'id="report-data">(.*?)</script>', text, re.S)
    assert match is not None
    value: dict = json.loads(match.group(1))  # type: ignore[type-arg]
    return value


@pytest.mark.parametrize("xdist", [False, True], ids=["one-process", "xdist"])
def test_the_session_writes_one_page_of_every_exchange(
    project: pytest.Pytester, kit: KitServer, xdist: bool
) -> None:
    report = project.path / "report.html"
    args = ["transcripts", "--recorder-agent", kit.base_url, "--recorder-html-report", str(report)]
    if xdist:
        args += ["-n", "2", "--dist", "loadfile"]
    result = project.runpytest(*args)
    result.assert_outcomes(passed=9, failed=1)
    data = page_data(report)
    assert data["summary"]["line"] == "6 transcripts, 10 exchanges: 9 passed, 1 failed"
    assert data["summary"]["exit_status"] == 1
    keys = [(r["file"], r["exchange"]) for r in data["exchanges"]]
    assert keys == sorted(keys) and len(keys) == 10
    (failed,) = [r for r in data["exchanges"] if r["verdict"] == "failed"]
    assert failed["file"] == "transcripts/02-review.http" and failed["exchange"] == 1
    assert [m["path"] for m in failed["mismatches"]] == ["$.result.task.status.state"]
    replies = failed["replies"]
    changed = [op for op in replies["ops"] if op[0] != "equal"]
    (_, i1, i2, j1, j2) = changed[0]
    assert [line.strip() for line in replies["recorded"][i1:i2]] == [
        '"state": "TASK_STATE_FAILED",'
    ]
    assert [line.strip() for line in replies["live"][j1:j2]] == ['"state": "TASK_STATE_COMPLETED",']
