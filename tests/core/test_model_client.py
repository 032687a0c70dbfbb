"""The OpenAI-compatible client of the model checks (`recorder.checks.openai_compat`), against a
scripted model server of our own on loopback (`tests/model_server.py`): where the endpoint and
key come from, what a request sends, the parameters a server refuses, retries and their
waits, timeouts, and the key never in what the client hands on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from model_server import ModelServer, Reply

from recorder.checks.openai_compat import (
    DEFAULT_BASE_URL,
    EndpointError,
    EndpointSettings,
    ModelCallError,
    ModelClient,
    RetryPolicy,
    read_endpoint,
    resolve_endpoint,
)

KEY = "sk-test-Zq8xW2vN5rT7yU1p"
MESSAGES = [{"role": "user", "content": "Is this right?"}]


_made: list[ModelClient] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _made:
        _made.pop().close()


def client(server: ModelServer, *, key: str | None = None, retries: int = 3) -> ModelClient:
    """A client of `server` whose retries wait no time (the waits are kept in `.waits`)."""
    environ = {"OPENAI_BASE_URL": server.base_url}
    if key is not None:
        environ["OPENAI_API_KEY"] = key
    waits: list[float] = []
    made = ModelClient(
        resolve_endpoint(EndpointSettings(), environ),
        environ,
        retry=RetryPolicy(retries=retries, backoff=0.001, max_wait=0.01),
        sleep=waits.append,
    )
    made.waits = waits  # type: ignore[attr-defined]
    _made.append(made)
    return made


# --- where the endpoint is ---------------------------------------------------------------------


def test_the_base_url_comes_from_the_rules_then_the_environment_then_the_default() -> None:
    environ = {"OPENAI_BASE_URL": "http://localhost:11434/v1/", "OPENAI_API_KEY": "k"}
    assert resolve_endpoint(EndpointSettings(), environ).base_url == "http://localhost:11434/v1"
    mine = EndpointSettings(base_url="http://127.0.0.1:8000/v1")
    assert resolve_endpoint(mine, environ).base_url == "http://127.0.0.1:8000/v1"
    hosted = resolve_endpoint(EndpointSettings(), {"OPENAI_API_KEY": "k"})
    assert hosted.base_url == DEFAULT_BASE_URL
    # an empty variable counts as unset
    empty = resolve_endpoint(EndpointSettings(), {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "k"})
    assert empty.base_url == DEFAULT_BASE_URL


def test_no_endpoint_at_all_is_an_error_that_says_what_to_set() -> None:
    with pytest.raises(EndpointError) as caught:
        resolve_endpoint(EndpointSettings(), {"OPENAI_API_KEY": ""})
    message = str(caught.value)
    assert "OPENAI_BASE_URL" in message and "OPENAI_API_KEY" in message
    assert "--no-judge" in message


def test_a_server_of_your_own_needs_no_key() -> None:
    found = resolve_endpoint(EndpointSettings(), {"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert not found.has_key and found.key_variable == "OPENAI_API_KEY"


def test_a_key_variable_named_in_the_rules_must_be_set() -> None:
    settings = EndpointSettings(api_key_env="MY_MODEL_KEY")
    with pytest.raises(EndpointError, match="api_key_env: MY_MODEL_KEY is not set"):
        resolve_endpoint(settings, {"OPENAI_API_KEY": "k"})
    found = resolve_endpoint(settings, {"MY_MODEL_KEY": "k2"})
    assert found.key_variable == "MY_MODEL_KEY" and found.has_key
    assert "k2" not in repr(found)  # (the key itself is never held in the value)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"api_key": KEY}, "a key is never written in a rules file"),
        ({"api_key_env": "not a name"}, "the NAME of an environment variable"),
        ({"base_url": "localhost:11434"}, "expected an http(s) URL"),
        ({"base_url": "https://user:pw@example.com/v1"}, "no user or password"),
    ],
)
def test_bad_endpoint_options_are_refused(options: dict[str, str], problem: str) -> None:
    with pytest.raises(EndpointError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        read_endpoint(options)


# --- what a request sends ------------------------------------------------------------------------


def test_a_chat_request_asks_for_json_at_temperature_0_with_the_key() -> None:
    with ModelServer(judge=lambda body: "{}") as server:
        answer = client(server, key=KEY).chat("llama3.2", MESSAGES, seed=2)
    (sent,) = server.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["model"] == "llama3.2" and body["messages"] == MESSAGES
    assert body["temperature"] == 0 and body["seed"] == 2
    assert body["response_format"] == {"type": "json_object"}
    assert answer.content == "{}"
    assert answer.usage.requests == 1 and answer.usage.prompt_tokens == 3


def test_no_key_no_authorization_header() -> None:
    with ModelServer(judge=lambda body: "{}") as server:
        client(server).chat("m", MESSAGES)
    assert "authorization" not in server.requests[0]["headers"]


@pytest.mark.parametrize("refused", ["response_format", "temperature", "seed"])
def test_a_parameter_the_server_refuses_is_dropped_for_that_model(refused: str) -> None:
    with ModelServer(judge=lambda body: "{}", refuse=frozenset({refused})) as server:
        made = client(server)
        first = made.chat("m", MESSAGES, seed=0)
        made.chat("m", MESSAGES, seed=1)
    assert first.usage.requests == 2  # refused, then asked without it
    assert [refused in r["body"] for r in server.requests] == [True, False, False]
    assert made.waits == []  # (a refusal is no failure: no wait)


def test_429_and_5xx_are_retried_after_what_retry_after_says() -> None:
    script = [
        Reply(429, {"error": {"message": "Rate limit reached"}}, headers={"retry-after": "0"}),
        Reply(503, {"error": "overloaded"}, headers={"retry-after-ms": "5"}),
        Reply(500, text="oops"),
    ]
    with ModelServer(judge=lambda body: "{}", script=script) as server:
        made = client(server)
        answer = made.chat("m", MESSAGES)
    assert server.count() == 4 and answer.usage.requests == 4
    assert made.waits[:2] == [0.0, 0.005]
    assert 0 < made.waits[2] <= 0.01  # (no Retry-After: the backoff)


def test_a_retry_after_too_long_to_honour_falls_back_to_the_backoff() -> None:
    script = [Reply(429, {"error": "later"}, headers={"retry-after": "3600"})]
    with ModelServer(judge=lambda body: "{}", script=script) as server:
        made = client(server)
        made.chat("m", MESSAGES)
    assert made.waits and made.waits[0] <= 0.01


def test_retries_are_bounded_and_the_error_says_what_came_back() -> None:
    script = [Reply(503, {"error": {"message": "model is loading"}}) for _ in range(10)]
    with ModelServer(script=script) as server, pytest.raises(ModelCallError) as caught:
        client(server, retries=2).chat("m", MESSAGES)
    assert server.count() == 3
    message = str(caught.value)
    assert "HTTP 503: model is loading" in message and "(after 3 requests)" in message
    assert server.base_url + "/chat/completions" in message
    assert caught.value.usage.requests == 3


def test_a_client_error_is_not_retried() -> None:
    script = [Reply(404, {"error": {"message": "model 'nope' not found"}})]
    with ModelServer(script=script) as server, pytest.raises(ModelCallError, match="not found"):
        client(server).chat("nope", MESSAGES)
    assert server.count() == 1


def test_a_slow_server_times_out() -> None:
    with ModelServer(delay=1.0) as server:
        made = ModelClient(
            resolve_endpoint(EndpointSettings(), {"OPENAI_BASE_URL": server.base_url}),
            {},
            retry=RetryPolicy(retries=0),
        )
        _made.append(made)
        with pytest.raises(ModelCallError, match=r"no answer within 0\.2 s"):
            made.chat("m", MESSAGES, timeout=0.2)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(text="not json"), "the reply is not JSON"),
        (Reply(body=[1]), "not a JSON object"),
        (Reply(body={"choices": []}), "no choices[0].message"),
        (Reply(body={"choices": [{"message": {"content": None}}]}), "has no text"),
        (
            Reply(body={"choices": [{"message": {"content": None, "refusal": "I can't"}}]}),
            "the model refused: I can't",
        ),
    ],
)
def test_a_reply_without_an_answer_is_an_error(reply: Reply, problem: str) -> None:
    with ModelServer(script=[reply]) as server, pytest.raises(ModelCallError) as caught:
        client(server).chat("m", MESSAGES)
    assert problem in str(caught.value)


def test_the_key_a_server_echoes_is_blotted_out() -> None:
    with ModelServer(key="the-right-one") as server, pytest.raises(ModelCallError) as caught:
        client(server, key=KEY).chat("m", MESSAGES)
    # the server said "Incorrect API key provided: Bearer <the key>"
    assert "Incorrect API key provided: Bearer ***" in str(caught.value)
    assert KEY not in str(caught.value)


def test_embeddings_come_back_in_the_inputs_order() -> None:
    reply = Reply(
        body={
            "data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}],
            "usage": {"prompt_tokens": 4},
        }
    )
    with ModelServer(script=[reply]) as server:
        found = client(server).embed("e", ["first", "second"])
    assert found.vectors == ((1.0, 0.0), (0.0, 1.0))
    assert server.requests[0]["body"] == {"model": "e", "input": ["first", "second"]}
    assert found.usage.prompt_tokens == 4


def test_embeddings_that_are_not_numbers_are_an_error() -> None:
    reply = Reply(body={"data": [{"index": 0, "embedding": ["x"]}]})
    with ModelServer(script=[reply]) as server, pytest.raises(ModelCallError, match="numbers"):
        client(server).embed("e", ["first"])
