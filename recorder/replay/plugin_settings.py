"""The pytest plugin's settings: its options and ini keys (`add_options`), each read and
checked (a bad one is a `pytest.UsageError` naming it). Kept apart from the plugin's
collection and items."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from recorder.replay.trials import TrialPlan

__all__ = [
    "add_options",
    "agent_setting",
    "downstreams_setting",
    "grpc_agent_setting",
    "rules_setting",
    "timeout_setting",
    "trials_setting",
    "variables_setting",
]


def add_options(parser: pytest.Parser) -> None:
    """The plugin's options and ini keys (its `pytest_addoption`)."""
    group = parser.getgroup("recorder", "replaying .http transcripts (recorder)")
    group.addoption(
        "--recorder-agent",
        metavar="URL",
        default=None,
        help="Agent that transcripts are played against (default: start the bundled kit).",
    )
    group.addoption(
        "--recorder-grpc-agent",
        metavar="HOST:PORT",
        default=None,
        help="Where the transcripts' gRPC calls go (default: the GRPC interface of the "
        "agent's card), as recorder play --grpc-agent.",
    )
    group.addoption(
        "--recorder-rules",
        metavar="FILE",
        default=None,
        help="YAML rules file merged over the A2A defaults.",
    )
    group.addoption(
        "--recorder-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="Seconds allowed for each reply (default 30).",
    )
    group.addoption(
        "--recorder-wait",
        metavar="SECONDS",
        type=float,
        default=None,
        help="Wait up to SECONDS for --recorder-agent to answer (its card is polled) before "
        "the first exchange: for CI, where the agent starts beside the tests.",
    )
    group.addoption(
        "--recorder-update",
        action="store_true",
        default=False,
        help="Rewrite the golden transcripts from the live replies (as recorder play --update).",
    )
    group.addoption(
        "--recorder-var",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="A value for {{NAME}} placeholders (repeatable); over --recorder-env-file and the "
        "environment.",
    )
    group.addoption(
        "--recorder-env-file",
        metavar="FILE",
        action="append",
        default=[],
        help="A dotenv file of NAME=VALUE lines for placeholders (repeatable, later files "
        "win); over the environment.",
    )
    group.addoption(
        "--recorder-trials",
        metavar="N",
        type=int,
        default=None,
        help="Play each transcript N times; an exchange passes in ceil(R*N) trials at least.",
    )
    group.addoption(
        "--recorder-pass-rate",
        metavar="R",
        type=float,
        default=None,
        help="With --recorder-trials: the fraction of trials to pass, 0 < R <= 1 (default 1.0).",
    )
    group.addoption(
        "--recorder-confidence",
        metavar="C",
        type=float,
        default=None,
        help="With --recorder-trials: judge the pass rate by Wilson's lower bound at C.",
    )
    group.addoption(
        "--recorder-early-stop",
        action="store_true",
        default=False,
        help="With --recorder-trials: stop a file's trials once no verdict can change.",
    )
    group.addoption(
        "--recorder-html-report",
        metavar="FILE",
        default=None,
        help="Write an HTML report of the exchanges run (as recorder play --html-report): "
        "one self-contained page, the replies side by side.",
    )
    group.addoption(
        "--recorder-no-judge",
        action="store_true",
        default=False,
        help="Skip the checks that ask a model (as recorder play --no-judge): counted as "
        "skipped in the summary, never passed.",
    )
    group.addoption(
        "--recorder-downstream",
        metavar="NAME@[HOST:]PORT",
        action="append",
        default=[],
        help="Where the stand-in for the agent's downstream NAME listens (repeatable), as "
        "recorder play --downstream; default: where its calls were recorded to.",
    )
    group.addoption(
        "--recorder-live-downstreams",
        action="store_true",
        default=False,
        help="Stand in for none of the agent's downstreams (as recorder play "
        "--live-downstreams): its calls are not compared.",
    )
    parser.addini(
        "recorder_downstreams",
        type="linelist",
        default=[],
        help="Like --recorder-downstream, one NAME@[HOST:]PORT a line (the option wins).",
    )
    parser.addini(
        "recorder_trials", default="", help="Like --recorder-trials (the option wins when given)."
    )
    parser.addini(
        "recorder_confidence", default="", help="Like --recorder-confidence (the option wins)."
    )
    parser.addini("recorder_early_stop", default="", help="Like --recorder-early-stop (true).")
    parser.addini(
        "recorder_pass_rate",
        default="",
        help="Like --recorder-pass-rate (the option wins when given).",
    )
    parser.addini(
        "recorder_transcripts",
        type="paths",
        default=[],
        help="Folders whose .http transcripts are collected as tests (one per exchange).",
    )
    parser.addini(
        "recorder_agent", default="", help="Like --recorder-agent (the option wins when given)."
    )
    parser.addini(
        "recorder_grpc_agent",
        default="",
        help="Like --recorder-grpc-agent (the option wins when given).",
    )
    parser.addini(
        "recorder_rules",
        default="",
        help="Like --recorder-rules; a relative path is relative to the ini file's folder.",
    )
    parser.addini(
        "recorder_timeout", default="", help="Like --recorder-timeout (default 30 seconds)."
    )


def agent_setting(config: pytest.Config) -> str | None:
    value: str | None = config.getoption("recorder_agent", None) or config.getini("recorder_agent")
    return value or None


def grpc_agent_setting(config: pytest.Config) -> str | None:
    """--recorder-grpc-agent (or its ini key) as HOST:PORT; a bad one is a usage error."""
    value: str | None = config.getoption("recorder_grpc_agent", None) or config.getini(
        "recorder_grpc_agent"
    )
    if not value:
        return None
    from recorder.replay.grpc_send import grpc_address

    try:
        return grpc_address(value)
    except ValueError as exc:
        raise pytest.UsageError(f"--recorder-grpc-agent: {exc}") from None


def rules_setting(config: pytest.Config) -> str | None:
    option: str | None = config.getoption("recorder_rules", None)
    if option:
        return option  # relative to where pytest was started, like any command-line path
    value: str = config.getini("recorder_rules")
    if not value:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return str(base / value)


def timeout_setting(config: pytest.Config) -> float:
    option: float | None = config.getoption("recorder_timeout", None)
    if option is not None:
        return option
    value: str = config.getini("recorder_timeout")
    if not value:
        return 30.0
    try:
        return float(value)
    except ValueError:
        raise pytest.UsageError(
            f"recorder_timeout (ini): expected a number of seconds, got {value!r}"
        ) from None


def variables_setting(config: pytest.Config) -> dict[str, str]:
    """The environment, under --recorder-env-file's files, under --recorder-var's values
    (`recorder play`'s order); a bad one is a usage error."""
    from recorder.replay.envfile import EnvFileError, merge_variables, parse_env_file, parse_var

    values: dict[str, str] = {}
    for text in config.getoption("recorder_var", None) or []:
        try:
            name, value = parse_var(text)
        except ValueError as exc:
            raise pytest.UsageError(f"--recorder-var: {exc}") from None
        values[name] = value
    files = []
    for path in config.getoption("recorder_env_file", None) or []:
        try:
            with open(path, encoding="utf-8-sig") as file:
                files.append(parse_env_file(file.read(), path))
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise pytest.UsageError(
                f"--recorder-env-file: cannot read the env file {path}: {reason}"
            ) from None
        except EnvFileError as exc:
            raise pytest.UsageError(f"--recorder-env-file: {exc}") from None
    return merge_variables(os.environ, files, values)


def trials_setting(config: pytest.Config) -> TrialPlan | None:
    """The trial plan of --recorder-trials, --recorder-pass-rate, --recorder-confidence and
    --recorder-early-stop (or the ini), or None."""
    trials: int | None = config.getoption("recorder_trials", None)
    if trials is None:
        trials = _ini_number(config, "recorder_trials", int)
    rate: float | None = config.getoption("recorder_pass_rate", None)
    if rate is None:
        rate = _ini_number(config, "recorder_pass_rate", float)
    confidence: float | None = config.getoption("recorder_confidence", None)
    if confidence is None:
        confidence = _ini_number(config, "recorder_confidence", float)
    early_stop = bool(config.getoption("recorder_early_stop", False)) or str(
        config.getini("recorder_early_stop")
    ).strip().lower() in ("1", "true", "yes")
    for given, name in ((rate, "pass-rate"), (confidence, "confidence")):
        if given is not None and trials is None:
            raise pytest.UsageError(f"--recorder-{name} needs --recorder-trials N")
    if early_stop and trials is None:
        raise pytest.UsageError("--recorder-early-stop needs --recorder-trials N")
    if trials is None:
        return None
    if config.getoption("recorder_update", False):
        raise pytest.UsageError("--recorder-trials cannot be used with --recorder-update")
    if not 1 <= trials <= 1000:
        raise pytest.UsageError(f"--recorder-trials: expected 1 to 1000, got {trials}")
    if rate is not None and not 0 < rate <= 1:
        raise pytest.UsageError(f"--recorder-pass-rate: expected 0 < R <= 1, got {rate:g}")
    if confidence is not None and not 0 < confidence < 1:
        raise pytest.UsageError(f"--recorder-confidence: expected 0 < C < 1, got {confidence:g}")
    from recorder.replay.trials import TrialPlan

    plan = TrialPlan(trials, 1.0 if rate is None else rate, confidence, early_stop)
    problem = plan.problem()
    if problem is not None:
        raise pytest.UsageError(f"--recorder-trials: {problem}")
    return plan


def _ini_number(config: pytest.Config, name: str, kind: type[Any]) -> Any:
    value: str = config.getini(name)
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        raise pytest.UsageError(f"{name} (ini): expected a number, got {value!r}") from None


def downstreams_setting(config: pytest.Config) -> dict[str, tuple[str, int]] | None:
    """--recorder-downstream NAME@[HOST:]PORT (repeatable; or the ini's lines) as NAME ->
    (HOST, PORT); None with --recorder-live-downstreams (nothing stands in). A bad one is a
    usage error."""
    from recorder.replay.standin import parse_place

    texts: list[str] = config.getoption("recorder_downstream", None) or list(
        config.getini("recorder_downstreams")
    )
    live = bool(config.getoption("recorder_live_downstreams", False))
    if live and texts:
        raise pytest.UsageError(
            "--recorder-downstream and --recorder-live-downstreams do not go together"
        )
    if live:
        return None
    places: dict[str, tuple[str, int]] = {}
    for text in texts:
        try:
            name, host, port = parse_place(text)
        except ValueError as exc:
            raise pytest.UsageError(f"--recorder-downstream: {exc}") from None
        places[name] = (host, port)
    return places
