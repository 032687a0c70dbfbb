"""The OpenAI-compatible API the model checks call: `POST {base}/chat/completions` and
`POST {base}/embeddings`, on a hosted API or a local server (Ollama, vLLM, llama.cpp's server,
LM Studio) alike.

Where: the base URL and the key are read as the openai SDK reads them: the rules file's
`base_url` if given, else `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; the key from
`OPENAI_API_KEY`, or from the variable the rules file names (`api_key_env: NAME`: only a name,
the key is never written in a rules file). An empty variable counts as unset. Unlike the SDK,
no key is needed for a server of your own (Ollama needs none): none is then sent. The key
lives in this process's memory only, in the `Authorization` header of the client's
requests; any text this module hands on (an error, a server's message) has it blotted out.

How (`ModelClient`):
- temperature 0, and a seed, where the server takes them; JSON mode
  (`response_format: {"type": "json_object"}`) where it has it. A server that refuses one
  of these parameters (HTTP 400 or 422 naming it, as OpenAI's reasoning models do for
  temperature and LM Studio for `json_object`) is asked again without it, and never sent it
  again for that model;
- retries, bounded: a 408, 409, 429 or 5xx, a connection that failed or timed out, is tried
  again up to `RetryPolicy.retries` times, after what `Retry-After` (or `retry-after-ms`)
  says when it says 60 s or less, else after an exponential backoff with jitter (the SDK's
  rule);
- a timeout per request; what each call used (`usage`: tokens), its time and its number of
  requests (retries and refused parameters included) are handed back with its answer.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

__all__ = [
    "BASE_URL_VARIABLE",
    "DEFAULT_BASE_URL",
    "ENDPOINT_OPTIONS",
    "KEY_VARIABLE",
    "ChatAnswer",
    "Embeddings",
    "Endpoint",
    "EndpointError",
    "EndpointSettings",
    "ModelCallError",
    "ModelClient",
    "RetryPolicy",
    "Usage",
    "read_endpoint",
    "resolve_endpoint",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"
KEY_VARIABLE = "OPENAI_API_KEY"
_SHOWN = 300  # characters of a server's message in an error
_RETRY_STATUSES = frozenset({408, 409, 429})
_OPTIONAL = ("response_format", "temperature", "seed")
"""What a request sends that a server may refuse: asked again without it."""


class EndpointError(ValueError):
    """No usable endpoint (the message says why and what to set); raised before any request."""


class ModelCallError(Exception):
    """A request that failed for good (after its retries): the message says what came back;
    `usage`: what it cost all the same."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else Usage()


@dataclass(frozen=True)
class EndpointSettings:
    """Where a check's model is, as its rules file says (None: from the environment)."""

    base_url: str | None = None
    api_key_env: str | None = None
    """The NAME of the variable holding the key (None: `OPENAI_API_KEY`)."""


@dataclass(frozen=True)
class Endpoint:
    """An endpoint resolved: its base URL (no trailing slash) and the variable its key is in
    (`has_key`: set; the key itself is never held here, so never printed with this value)."""

    base_url: str
    key_variable: str
    has_key: bool


ENDPOINT_OPTIONS = ("base_url", "api_key_env")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_endpoint(options: Mapping[str, Any]) -> EndpointSettings:
    """`base_url` and `api_key_env` of a check's options, checked; EndpointError says what is
    wrong. A key written in the rules file (`api_key`) is refused: only a variable's name."""
    for name in ("api_key", "key", "token"):
        if name in options:
            raise EndpointError(
                f"{name}: a key is never written in a rules file: put it in an environment "
                "variable and give its name, api_key_env: NAME (OPENAI_API_KEY by default)"
            )
    base_url = options.get("base_url")
    if base_url is not None:
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise EndpointError(
                f"base_url: expected an http(s) URL such as {DEFAULT_BASE_URL} or "
                "http://localhost:11434/v1"
            )
        if parts.username or parts.password:
            raise EndpointError("base_url: no user or password in the URL (api_key_env: NAME)")
    variable = options.get("api_key_env")
    if variable is not None and (
        not isinstance(variable, str) or not _VARIABLE_NAME.match(variable)
    ):
        raise EndpointError(
            "api_key_env: expected the NAME of an environment variable, such as OPENAI_API_KEY"
        )
    return EndpointSettings(base_url, variable)


def resolve_endpoint(settings: EndpointSettings, environ: Mapping[str, str]) -> Endpoint:
    """The endpoint `settings` mean in `environ`; EndpointError when there is none to use:
    a key variable named but not set, or no base URL given and no key for the hosted API."""
    key_variable = settings.api_key_env or KEY_VARIABLE
    has_key = bool(environ.get(key_variable))
    if settings.api_key_env and not has_key:
        raise EndpointError(f"api_key_env: {settings.api_key_env} is not set")
    base = settings.base_url or environ.get(BASE_URL_VARIABLE) or ""
    if not base:
        if not has_key:
            raise EndpointError(
                f"no model endpoint: set {BASE_URL_VARIABLE} (a server of your own, such as "
                f"Ollama's http://localhost:11434/v1) or {KEY_VARIABLE} (the hosted OpenAI "
                "API), or give base_url in the rules file; --no-judge skips the model checks"
            )
        base = DEFAULT_BASE_URL
    where = "base_url" if settings.base_url else BASE_URL_VARIABLE
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"{where}: expected an http(s) URL such as {DEFAULT_BASE_URL}")
    return Endpoint(base.rstrip("/"), key_variable, has_key)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and after how long a request is tried again (the openai SDK's rule: what
    `Retry-After` says when it is 60 s or less, else `backoff * 2**n`, at most `max_wait`,
    less up to a quarter of jitter)."""

    retries: int = 3
    backoff: float = 0.5
    max_wait: float = 8.0
    honoured_retry_after: float = 60.0

    def wait(self, attempt: int, headers: httpx.Headers | None) -> float:
        said = _retry_after(headers) if headers is not None else None
        if said is not None and 0 <= said <= self.honoured_retry_after:
            return said
        wait: float = min(self.backoff * 2**attempt, self.max_wait)
        return wait * (1 - 0.25 * random.random())


def _retry_after(headers: httpx.Headers) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


@dataclass(frozen=True)
class Usage:
    """What calls cost: requests sent (retries included), tokens, seconds (waits included)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.requests + other.requests,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.seconds + other.seconds,
        )


@dataclass(frozen=True)
class ChatAnswer:
    """The text of a chat completion's first choice, and what it cost."""

    content: str
    usage: Usage


@dataclass(frozen=True)
class Embeddings:
    """One vector per input text, in their order, and what they cost."""

    vectors: tuple[tuple[float, ...], ...]
    usage: Usage


_Answer = TypeVar("_Answer")


class ModelClient:
    """The requests to one endpoint (thread-safe: one httpx client, its connections pooled).
    `transport`: httpx's, for tests; `sleep`: how a retry waits."""

    def __init__(
        self,
        endpoint: Endpoint,
        environ: Mapping[str, str],
        *,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.retry = retry or RetryPolicy()
        key = environ.get(endpoint.key_variable) or ""
        self._secret = key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(headers=headers, transport=transport, follow_redirects=False)
        self._sleep = sleep
        self._lock = threading.Lock()
        self._refused: dict[str, set[str]] = {}
        """model -> the optional parameters its server refused (not sent again)."""

    def close(self) -> None:
        self._http.close()

    def chat(
        self,
        model: str,
        messages: Sequence[Mapping[str, str]],
        *,
        seed: int | None = None,
        timeout: float = 60.0,
    ) -> ChatAnswer:
        """One chat completion at temperature 0 in JSON mode (each where the server takes
        it); ModelCallError when it fails for good or answers no text."""
        body: dict[str, Any] = {
            "model": model,
            "messages": [dict(message) for message in messages],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        if seed is not None:
            body["seed"] = seed
        return self._call("/chat/completions", body, model, timeout, self._content)

    def embed(self, model: str, texts: Sequence[str], *, timeout: float = 60.0) -> Embeddings:
        """The embeddings of `texts`, in their order; ModelCallError when it fails for good."""
        body = {"model": model, "input": list(texts)}

        def vectors(reply: dict[str, Any], usage: Usage) -> Embeddings:
            return Embeddings(self._vectors(reply, len(texts)), usage)

        return self._call("/embeddings", body, model, timeout, vectors)

    def scrub(self, text: str) -> str:
        """`text` with the key blotted out (a server may echo what it was sent)."""
        return text.replace(self._secret, "***") if self._secret else text

    # --- the requests ---------------------------------------------------------------------

    def _call(
        self,
        route: str,
        body: dict[str, Any],
        model: str,
        timeout: float,
        read: Callable[[dict[str, Any], Usage], _Answer],
    ) -> _Answer:
        """POST `body` (retried, see the module docstring) and `read` the reply; every
        ModelCallError raised carries what the call cost."""
        started = time.monotonic()
        requests = [0]
        try:
            reply = self._post(route, body, model, timeout, requests)
            usage = _usage(reply, requests[0], time.monotonic() - started)
            return read(reply, usage)
        except ModelCallError as exc:
            if not exc.usage.requests:
                exc.usage = Usage(requests[0], seconds=time.monotonic() - started)
            raise

    def _content(self, reply: dict[str, Any], usage: Usage) -> ChatAnswer:
        choices = reply.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, Mapping) else None
        if not isinstance(message, Mapping):
            raise ModelCallError(
                f"the reply has no choices[0].message: {self._shown(reply)}", usage
            )
        content = message.get("content")
        if not isinstance(content, str):
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                raise ModelCallError(f"the model refused: {self._shown(refusal)}", usage)
            raise ModelCallError(f"the reply's message has no text: {self._shown(message)}", usage)
        return ChatAnswer(content, usage)

    def _vectors(self, reply: dict[str, Any], count: int) -> tuple[tuple[float, ...], ...]:
        data = reply.get("data")
        if not isinstance(data, list) or len(data) != count:
            raise ModelCallError(f"expected {count} embeddings in data[], got {self._shown(data)}")
        by_index: dict[int, tuple[float, ...]] = {}
        for position, item in enumerate(data):
            vector = item.get("embedding") if isinstance(item, Mapping) else None
            index = item.get("index", position) if isinstance(item, Mapping) else position
            if (
                not isinstance(vector, list)
                or not vector
                or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)
            ):
                raise ModelCallError(f"data[{position}].embedding is not a list of numbers")
            by_index[index if isinstance(index, int) else position] = tuple(map(float, vector))
        if sorted(by_index) != list(range(count)):
            raise ModelCallError(f"the embeddings' indexes are not 0..{count - 1}")
        return tuple(by_index[n] for n in range(count))

    def _post(
        self, route: str, body: dict[str, Any], model: str, timeout: float, requests: list[int]
    ) -> dict[str, Any]:
        """The JSON object a 200 reply holds; requests[0] counts the requests sent."""
        url = self.endpoint.base_url + route
        with self._lock:
            refused = set(self._refused.get(model, ()))
        for name in refused:
            body.pop(name, None)
        failures = 0
        while True:
            requests[0] += 1
            try:
                response = self._http.post(url, json=body, timeout=timeout)
            except httpx.TimeoutException:
                problem = f"no answer within {timeout:g} s"
                headers = None
            except httpx.TransportError as exc:
                problem = f"cannot reach it: {self.scrub(str(exc)) or type(exc).__name__}"
                headers = None
            else:
                if response.status_code == 200:
                    return self._json(response)
                text = response.text
                dropped = self._refused_parameter(response.status_code, text, body)
                if dropped is not None:
                    with self._lock:
                        self._refused.setdefault(model, set()).add(dropped)
                    body.pop(dropped)
                    continue  # (a refusal costs a request, not a retry)
                problem = f"HTTP {response.status_code}: {self._message(text)}"
                headers = response.headers
                if not _retryable(response.status_code):
                    raise ModelCallError(self._where(url, problem, requests[0]))
            if failures >= self.retry.retries:
                raise ModelCallError(self._where(url, problem, requests[0]))
            self._sleep(self.retry.wait(failures, headers))
            failures += 1

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            value = response.json()
        except ValueError:
            raise ModelCallError(f"the reply is not JSON: {self._shown(response.text)}") from None
        if not isinstance(value, dict):
            raise ModelCallError(f"the reply is not a JSON object: {self._shown(value)}")
        return value

    @staticmethod
    def _refused_parameter(status: int, text: str, body: Mapping[str, Any]) -> str | None:
        """The optional parameter a 400/422 names, when the body sent it."""
        if status not in (400, 422):
            return None
        named = _error_param(text)
        for name in _OPTIONAL:
            if name in body and (named == name or name in text):
                return name
        return None

    def _message(self, text: str) -> str:
        """A server's error, as its `error.message` says it (else its text), shortened."""
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        error = value.get("error") if isinstance(value, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        return self._shown(" ".join(text.split()) or "(no text)")

    def _shown(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        text = self.scrub(text)
        return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"

    def _where(self, url: str, problem: str, requests: int) -> str:
        tries = "" if requests == 1 else f" (after {requests} requests)"
        return f"POST {url}: {problem}{tries}"


def _retryable(status: int) -> bool:
    return status in _RETRY_STATUSES or status >= 500


def _error_param(text: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    error = value.get("error") if isinstance(value, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return param if isinstance(param, str) else None


def _usage(reply: Mapping[str, Any], requests: int, seconds: float) -> Usage:
    usage = reply.get("usage")
    prompt = completion = 0
    if isinstance(usage, Mapping):
        prompt = _count(usage.get("prompt_tokens"))
        completion = _count(usage.get("completion_tokens"))
    return Usage(requests, prompt, completion, seconds)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
