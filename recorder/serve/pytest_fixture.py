"""The `recorder_stand_in` pytest fixture: a stand-in agent on a free loopback port for one test.

An entry point of its own (`[project.entry-points.pytest11]`, `recorder-serve`), so that the
player's plugin (`recorder.replay.pytest_plugin`) does not import this job.

    def test_my_planner(recorder_stand_in: str) -> None:
        assert my_planner.run(recorder_stand_in) == "done"   # http://127.0.0.1:PORT

The transcripts are the ini option `recorder_stand_in_transcripts` (default `transcripts`,
relative to the rootdir), or the test's marker:

    @pytest.mark.recorder_stand_in("tests/goldens/", fresh_ids=True, strict=False)

`strict` (default True): the test fails at teardown when any request matched no recorded
exchange, with the stand-in's message for each.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recorder.rules.ruleset import load_rules
from recorder.serve.app import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

__all__ = ["recorder_stand_in"]

_INI = "recorder_stand_in_transcripts"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        _INI,
        "Transcripts (files or folders) the recorder_stand_in fixture serves.",
        type="args",
        default=["transcripts"],
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "recorder_stand_in(*paths, fresh_ids=False, pace=False, rules=None, strict=True): what "
        "the recorder_stand_in fixture serves, and how",
    )


@pytest.fixture
def recorder_stand_in(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a stand-in agent (`recorder serve`) for this test."""
    marker = request.node.get_closest_marker("recorder_stand_in")
    args: tuple[str, ...] = tuple(marker.args) if marker else ()
    options = dict(marker.kwargs) if marker else {}
    root = Path(str(request.config.rootpath))
    paths = [str(root / p) for p in (args or request.config.getini(_INI))]
    strict = bool(options.pop("strict", True))
    rules = load_rules(options.pop("rules", None))
    stand_in = load_stand_in(paths, rules, **options)
    with ServerThread(stand_in, **server_options()) as server:
        yield server.url
    if strict and stand_in.unmatched:
        shown = "\n".join(f"  {problem}" for problem in stand_in.problems)
        pytest.fail(
            f"recorder_stand_in: {stand_in.unmatched} request(s) matched no recorded exchange:\n"
            f"{shown}",
            pytrace=False,
        )
