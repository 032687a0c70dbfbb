"""Rules: the A2A defaults, YAML loading and merging, clear errors; the JSONPath matcher."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recorder.errors import RulesError
from recorder.jsonpath import JsonPathError, PathMatcher, format_path, parse_path
from recorder.rules.ruleset import DEFAULT_RULES, Rules, load_rules, placeholder_name
from recorder.secrets.redact import DEFAULT_SECRET_FIELDS, DEFAULT_SECRET_HEADERS


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- defaults ---------------------------------------------------------------------------------


def test_defaults_name_the_a2a_generated_fields() -> None:
    fields = DEFAULT_RULES.generated_fields
    assert {name: fields[name] for name in ("contextId", "taskId", "messageId", "artifactId")} == {
        "contextId": "id",
        "taskId": "id",
        "messageId": "id",
        "artifactId": "id",
    }
    assert fields["timestamp"] == "time"
    assert fields["nextPageToken"] == "token"
    assert DEFAULT_RULES.generated_fields_beside["id"] == (
        "contextId",
        "taskId",
        "status",
        "choices",  # (an agent's call: a chat completion's id, tests/core/test_call_rules.py)
        "function",  # (... a model's tool call's)
    )
    assert DEFAULT_RULES.loose_kinds == frozenset({"time"})


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("0f02dae5-8ef1-4b08-8971-a755ca682445", "id"),
        ("2026-11-29T18:28:41.946689Z", "time"),
        ("2026-11-29T18:28:41Z", "time"),
        ("2026-11-29T18:28:41.123+02:00", "time"),
    ],
)
def test_default_shapes(text: str, kind: str) -> None:
    pattern = DEFAULT_RULES.shape_pattern
    assert pattern is not None
    match = pattern.fullmatch(text)
    assert match is not None and match.lastgroup == f"k_{kind}"
    inside = pattern.search(f"Task {text} is done")
    assert inside is not None and inside.group() == text


@pytest.mark.parametrize(
    "text",
    [
        "x0f02dae5-8ef1-4b08-8971-a755ca682445",  # part of a longer word
        "0f02dae5-8ef1-4b08-8971-a755ca6824451",
        "0f02dae5-8ef1-4b08-8971",
        "12026-11-29T18:28:41Z",
        "2026-11-29 18:28:41",
    ],
)
def test_default_shapes_do_not_match_near_misses(text: str) -> None:
    assert DEFAULT_RULES.shape_pattern is not None
    assert DEFAULT_RULES.shape_pattern.search(text) is None


def test_default_ignored_headers_and_secrets() -> None:
    for name in ("date", "server", "content-length", "etag", "transfer-encoding", "connection"):
        assert name in DEFAULT_RULES.ignored_headers
    assert "content-type" not in DEFAULT_RULES.ignored_headers
    assert dict(DEFAULT_RULES.secret_headers) == {
        "authorization": "A2A_TOKEN",
        "proxy-authorization": "PROXY_AUTHORIZATION",
        "cookie": "COOKIE",
        "set-cookie": "SET_COOKIE",
        "x-api-key": "X_API_KEY",
    }
    # the A2A places and the usual names (in any case, as the recorder matches them)
    assert (
        dict(DEFAULT_RULES.secret_fields)
        == dict(DEFAULT_SECRET_FIELDS)
        == {
            "token": "TOKEN",
            "credentials": "CREDENTIALS",
            "api_key": "API_KEY",
            "apikey": "APIKEY",
            "access_token": "ACCESS_TOKEN",
            "refresh_token": "REFRESH_TOKEN",
            "client_secret": "CLIENT_SECRET",
            "password": "PASSWORD",
            "secret": "SECRET",
        }
    )
    assert dict(DEFAULT_RULES.secret_headers) == dict(DEFAULT_SECRET_HEADERS)
    assert DEFAULT_RULES.placeholder_for_header("Authorization") == "A2A_TOKEN"
    assert DEFAULT_RULES.placeholder_for_header("Accept") is None


def test_error_free_text_is_ignored_by_default_only() -> None:
    assert DEFAULT_RULES.compare_error_message is False
    assert DEFAULT_RULES.ignored_matcher.match(("error", "message"))
    assert DEFAULT_RULES.ignored_matcher.match(
        ("error", "data", 1, "fieldViolations", 0, "description")
    )
    assert not DEFAULT_RULES.ignored_matcher.match(("error", "code"))
    assert not DEFAULT_RULES.ignored_matcher.match(("error", "data", 0, "reason"))
    assert not DEFAULT_RULES.ignored_matcher.match(("result", "error", "message"))


def test_load_none_is_the_defaults() -> None:
    assert load_rules(None) is DEFAULT_RULES
    assert DEFAULT_RULES.source is None


def test_an_empty_file_is_the_defaults(tmp_path: Path) -> None:
    rules = load_rules(write(tmp_path, "# nothing\n"))
    assert rules == DEFAULT_RULES
    assert rules.source == str(tmp_path / "rules.yaml")


def test_rules_are_hashable_values() -> None:
    assert hash(DEFAULT_RULES) == hash(load_rules(None))


# --- merging ------------------------------------------------------------------------------------


def test_a_list_replaces_the_default(tmp_path: Path) -> None:
    rules = load_rules(
        write(tmp_path, "ignored_paths: [$..totalSize]\nunordered_paths: ['$.result.tasks']\n")
    )
    assert rules.ignored_paths == ("$..totalSize",)
    assert rules.unordered_paths == ("$.result.tasks",)
    assert rules.ignored_matcher.match(("result", "totalSize"))


def test_add_and_remove_edit_a_default_list(tmp_path: Path) -> None:
    rules = load_rules(
        write(tmp_path, "ignored_headers:\n  add: [X-Trace]\n  remove: [Server, date]\n")
    )
    assert "x-trace" in rules.ignored_headers
    assert "server" not in rules.ignored_headers
    assert "date" not in rules.ignored_headers
    assert "etag" in rules.ignored_headers


def test_a_mapping_merges_and_null_removes(tmp_path: Path) -> None:
    text = (
        "generated_fields:\n  sessionId: id\n  nextPageToken: null\n"
        "generated_shapes:\n  ulid: '[0-9A-HJKMNP-TV-Z]{26}'\n"
        "secret_headers:\n  x-api-key: null\n  x-my-token: MY_TOKEN\n"
    )
    rules = load_rules(write(tmp_path, text))
    assert rules.generated_fields["sessionId"] == "id"
    assert "nextPageToken" not in rules.generated_fields
    assert rules.generated_fields["taskId"] == "id"
    assert set(rules.generated_shapes) == {"id", "time", "ulid"}
    assert rules.token_pattern is not None and "s_ulid" in rules.token_pattern.groupindex
    assert "x-api-key" not in rules.secret_headers
    assert rules.secret_headers["x-my-token"] == "MY_TOKEN"
    assert rules.secret_headers["authorization"] == "A2A_TOKEN"


def test_secret_names_as_a_list_derive_placeholders(tmp_path: Path) -> None:
    rules = load_rules(
        write(tmp_path, "secret_fields: [apiKey, client_secret]\nsecret_headers: [X-Auth-Token]\n")
    )
    assert dict(rules.secret_fields) == {
        **DEFAULT_RULES.secret_fields,
        "apiKey": "APIKEY",
        "client_secret": "CLIENT_SECRET",
    }
    assert rules.secret_headers["x-auth-token"] == "X_AUTH_TOKEN"


def test_a_rules_file_makes_a_default_secret_name_plain_with_null_in_any_case(
    tmp_path: Path,
) -> None:
    rules = load_rules(
        write(tmp_path, "secret_fields:\n  Token: null\n  PASSWORD: null\n  pin: PIN\n")
    )
    assert "token" not in rules.secret_fields and "password" not in rules.secret_fields
    assert rules.secret_fields["pin"] == "PIN"
    assert rules.secret_fields["credentials"] == "CREDENTIALS"  # the other defaults stay
    headers = load_rules(write(tmp_path, "secret_headers: {X-API-KEY: null}\n"))
    assert "x-api-key" not in headers.secret_headers


def test_booleans(tmp_path: Path) -> None:
    rules = load_rules(
        write(tmp_path, "compare_error_message: true\ncompare_content_type_params: true\n")
    )
    assert rules.compare_error_message and rules.compare_content_type_params
    assert not rules.ignored_matcher.match(("error", "message"))


@pytest.mark.parametrize(
    ("name", "placeholder"),
    [("authorization", "AUTHORIZATION"), ("x-api-key", "X_API_KEY"), ("Set-Cookie", "SET_COOKIE")],
)
def test_placeholder_name(name: str, placeholder: str) -> None:
    assert placeholder_name(name) == placeholder


# --- errors name the file and the key -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ignore_paths: []\n", "ignore_paths: unknown key (known keys: "),
        ("ignored_paths: $.a\n", "ignored_paths: expected a list of strings, got str '$.a'"),
        ("ignored_paths: ['a.b']\n", "ignored_paths: bad path 'a.b': a path starts with '$'"),
        ("unordered_paths: ['$.a[x]']\n", "unordered_paths: bad path '$.a[x]': expected [*], [N]"),
        (
            "ignored_headers: {add: [a], drop: [b]}\n",
            "ignored_headers: expected only 'add' and 'remove'",
        ),
        ("compare_error_message: yes please\n", "compare_error_message: expected true or false"),
        ("generated_fields: [taskId]\n", "generated_fields: expected a mapping, got list"),
        (
            "generated_fields: {taskId: ID}\n",
            "generated_fields.taskId: expected a kind such as id or time",
        ),
        ("generated_shapes: {id: '[0-9'}\n", "generated_shapes.id: bad regular expression"),
        (
            "generated_shapes: {id: 'a*'}\n",
            "generated_shapes.id: the expression matches an empty string",
        ),
        ("generated_shapes: {Bad-Kind: 'x'}\n", "generated_shapes.Bad-Kind: expected a kind name"),
        ("generated_paths: {'$.a..': id}\n", "generated_paths.$.a..: bad path"),
        (
            "generated_fields_beside: {id: contextId}\n",
            "generated_fields_beside.id: expected a list of strings",
        ),
        (
            "secret_headers: {authorization: token}\n",
            "secret_headers.authorization: expected a placeholder name",
        ),
        ("loose_kinds: [Time]\n", "loose_kinds: expected a kind such as id or time"),
        ("version: 2\n", "version: this recorder reads rules version 1, got 2"),
        ("- a\n- b\n", "expected a mapping of rule keys at the top, got list"),
    ],
)
def test_bad_rules_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RulesError) as caught:
        load_rules(path)
    assert str(caught.value).startswith(f"{path}:1: "), str(caught.value)
    assert message in str(caught.value), str(caught.value)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "ignored_paths:\n  - '$.a'\n bad: [\n")
    with pytest.raises(RulesError, match=rf"^{path}:3: not valid YAML"):
        load_rules(path)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("ignored_paths: ['$.a']\nignored_paths: ['$.b']\n", 2),
        ("generated_fields:\n  taskId: id\n  sessionId: id\n  taskId: time\n", 4),
    ],
)
def test_a_key_given_twice_is_an_error_not_the_last_one_silently(
    tmp_path: Path, text: str, line: int
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RulesError, match=rf"^{path}:{line}: not valid YAML: the key .* twice$"):
        load_rules(path)


def test_yaml_merge_keys_still_merge(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "generated_fields: {<<: {sessionId: id, runId: time}, runId: id}\n",
    )
    rules = load_rules(path)
    assert (rules.generated_fields["sessionId"], rules.generated_fields["runId"]) == ("id", "id")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="cannot read the rules file"):
        load_rules(tmp_path / "nope.yaml")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_bytes(b"ignored_paths: ['\xff']\n")
    with pytest.raises(RulesError, match="not UTF-8"):
        load_rules(path)


def test_rules_are_frozen() -> None:
    with pytest.raises(AttributeError):
        DEFAULT_RULES.compare_error_message = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        DEFAULT_RULES.generated_fields["x"] = "id"  # type: ignore[index]


def test_rules_built_in_code() -> None:
    rules = Rules(generated_fields={"sessionId": "id"}, ignored_headers=frozenset({"X-A"}))
    assert rules.ignored_headers == frozenset({"x-a"})
    assert rules.shape_pattern is None
    assert rules.token_pattern is not None


@pytest.mark.parametrize(
    "names",
    [
        ["sessionId", "run]", "a-", "x^"],  # class metacharacters as the last character
        ["sessionId", ""],  # an empty member name: no look at the character before
    ],
)
@pytest.mark.parametrize("colon", [": ", ":"])
def test_token_pattern_finds_generated_members_whatever_their_names(
    names: list[str], colon: str
) -> None:
    rules = Rules(generated_fields=dict.fromkeys(names, "id"), generated_shapes={})
    pattern = rules.token_pattern if colon == ": " else rules.compact_token_pattern
    assert pattern is not None
    members = [*names, "sessionIdx", "d", "other"]
    text = "{" + ",".join(f'"{n}"{colon}"v-{i}"' for i, n in enumerate(members))
    found = [m.group("f_id") for m in pattern.finditer(text + "}")]
    assert found == [f"v-{i}" for i in range(len(names))]


# --- JSONPath ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "place", "matches"),
    [
        ("$.result.task.metadata", ("result", "task", "metadata"), True),
        ("$.result.task.metadata", ("result", "task"), False),
        ("$.result.task.metadata", ("result", "task", "metadata", "x"), False),
        ("$..timestamp", ("result", "tasks", 3, "status", "timestamp"), True),
        ("$..timestamp", ("timestamp",), True),
        ("$.result.tasks[*].history", ("result", "tasks", 0, "history"), True),
        ("$.result.tasks[*].history", ("result", "tasks", "0", "history"), True),  # RFC 9535
        ("$.result.tasks[0].history", ("result", "tasks", "0", "history"), False),
        ("$.result.tasks[1].id", ("result", "tasks", 1, "id"), True),
        ("$.result.tasks[1].id", ("result", "tasks", 0, "id"), False),
        ("$.result.*.id", ("result", "task", "id"), True),
        ("$['result']['a.b']", ("result", "a.b"), True),
        ('$["@type"]', ("@type",), True),
        ("$..[*].reason", ("error", "data", 0, "reason"), True),
        ("$..*", ("a", 0), True),
        ("$", (), True),
        ("$", ("a",), False),
    ],
)
def test_path_matching(path: str, place: tuple[str | int, ...], matches: bool) -> None:
    assert PathMatcher([path]).match(place) is matches


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("result", "a path starts with '$'"),
        ("$.", "expected a member name after '.' at column 3"),
        ("$..", "expected a member name after '..' at column 4"),
        ("$[", "unclosed '[' at column 2"),
        ("$[-1]", "expected [*], [N] or ['name'] at column 2"),
        ("$a", "unexpected 'a' at column 2"),
    ],
)
def test_bad_paths(path: str, error: str) -> None:
    with pytest.raises(JsonPathError, match=re.escape(error)):
        parse_path(path)


def test_format_path() -> None:
    assert format_path(("result", "tasks", 0, "id")) == "$.result.tasks[0].id"
    assert format_path(()) == "$"
    assert format_path(("a.b", "@type", "x y")) == "$['a.b'].@type['x y']"


def test_matcher_state_walk() -> None:
    matcher = PathMatcher(["$.error.message", "$..totalSize"])
    state = matcher.step(matcher.start(), "result")
    assert not matcher.matches(state)
    assert matcher.matches(matcher.step(state, "totalSize"))
    empty = PathMatcher([])
    assert not empty and not empty.matches(empty.step(empty.start(), "x"))
