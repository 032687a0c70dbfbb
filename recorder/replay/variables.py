"""`{{NAME}}` placeholders: which variables a run needs, filling requests (and the recorded
replies that echo a request's value) from them, and keeping the values of the secret ones off
the terminal and the disk.

An unset variable:

- a secret placeholder (`secret_placeholders`: a push config's `{{TOKEN}}`, a `{{PASSWORD}}`
  field) gets a stand-in the player makes up, `recorder-stand-in-<NAME>-<run>`, the same in
  every file of a run (`stand_ins`): an agent that echoes it is compared against the recorded
  placeholder filled with the same stand-in, and `--update` writes it back as the placeholder;
- except in a header that carries a credential the agent checks (Authorization,
  Proxy-Authorization, X-API-Key, Cookie and the rules' secret headers,
  `credential_headers`): a made-up value there would only get a 401, so the exchanges that
  use it fail with a message naming the variable (`unset_variable`) and the others play;
- a placeholder that stands for no secret fails the exchanges that use it the same way.

A literal that reads as a placeholder is escaped in the transcript (`recorder.format.literals`): in
JSON as `\\u007b{NAME}}`, which is sent as it is (the same string to the agent), elsewhere as
`\\{\\{NAME\\}\\}`, sent as `{{NAME}}` (`fill_placeholders`) and compared so
(`fill_reply_placeholders`).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus

from recorder.errors import RecorderError
from recorder.format.literals import literal_text
from recorder.format.model import Headers, Request, Response, Transcript, header_text
from recorder.replay.plan import PlanItem
from recorder.replay.verdict.diff import Mismatch
from recorder.rules.ruleset import DEFAULT_RULES, Rules
from recorder.secrets.redact import PLACEHOLDER, PUSH_URL_SECRET, is_form, scrub_text

__all__ = [
    "CREDENTIAL_HEADERS",
    "MissingVariableError",
    "credential_headers",
    "fill_placeholders",
    "fill_reply_placeholders",
    "missing_variables",
    "request_placeholders",
    "scrub_mismatch",
    "secret_placeholders",
    "secret_values",
    "stand_in",
    "stand_ins",
    "transcript_placeholders",
    "unset_variable",
]

CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie"})
"""Request headers whose placeholder must be filled with a real value (lower case)."""

# one per process (a run): a stand-in is the same in every file, and differs from run to run
_RUN = secrets.token_hex(4)


class MissingVariableError(RecorderError):
    """A transcript uses `{{NAME}}` and the environment has no NAME."""

    def __init__(
        self, name: str, *, path: str, line: int | None, header: str | None = None
    ) -> None:
        self.name = name
        self.path = path
        self.line = line
        self.header = header
        where = path if line is None else f"{path}:{line}"
        uses = f"the request uses {{{{{name}}}}}"
        if header is not None:
            uses += f" in {header}, a credential the agent checks: no stand-in is made up"
        super().__init__(
            f"{where}: the variable {name} is not set ({uses}); set it in the environment, "
            f"with --var {name}=VALUE or in an --env-file, and run again"
        )


def stand_in(name: str) -> str:
    """The value the player makes up for the secret placeholder NAME whose variable is unset:
    the same for a name throughout a run, different from one run to the next."""
    return f"recorder-stand-in-{name}-{_RUN}"


def credential_headers(rules: Rules) -> frozenset[str]:
    """The request headers (lower case) whose placeholders get no stand-in."""
    return CREDENTIAL_HEADERS | frozenset(rules.secret_headers)


def stand_ins(transcript: Transcript, variables: Mapping[str, str], rules: Rules) -> dict[str, str]:
    """NAME -> stand-in, for each secret placeholder (`secret_placeholders`) a request of
    `transcript` uses outside a credential header and `variables` does not set."""
    secret = secret_placeholders(transcript, rules)
    credentials = credential_headers(rules)
    names: dict[str, str] = {}
    for exchange in transcript.exchanges:
        for name, header in _request_uses(exchange.request, credentials):
            if header is None and name in secret and name not in variables:
                names[name] = stand_in(name)
    return names


def unset_variable(
    request: Request,
    variables: Mapping[str, str],
    rules: Rules,
    *,
    path: str,
    line: int | None,
    stand_ins: Mapping[str, str] = MappingProxyType({}),
) -> MissingVariableError | None:
    """Why `request` cannot be sent, if so: a placeholder in a credential header whose variable
    is unset, or one elsewhere that neither a variable nor a stand-in fills."""
    for name, header in _request_uses(request, credential_headers(rules)):
        if name in variables or (header is None and name in stand_ins):
            continue
        return MissingVariableError(name, path=path, line=line, header=header)
    return None


def missing_variables(
    items: Iterable[PlanItem], variables: Mapping[str, str], rules: Rules = DEFAULT_RULES
) -> MissingVariableError | None:
    """The first `{{NAME}}` used by a request to be played that neither `variables` nor a
    stand-in (`stand_ins`) fills, if any: the exchanges that use it will fail."""
    for item in items:
        made_up = stand_ins(item.transcript, variables, rules)
        for exchange in item.transcript.exchanges[: item.play_count]:
            error = unset_variable(
                exchange.request,
                variables,
                rules,
                path=item.path,
                line=exchange.line,
                stand_ins=made_up,
            )
            if error is not None:
                return error
    return None


def _request_uses(request: Request, credentials: Iterable[str]) -> list[tuple[str, str | None]]:
    """(NAME, the credential header it is in, or None) for each `{{NAME}}` of `request`."""
    uses: list[tuple[str, str | None]] = []
    for name, value in request.headers:
        if "{{" in value:
            header = name if name.lower() in credentials else None
            uses.extend((m.group(1), header) for m in PLACEHOLDER.finditer(value))
    texts = [request.target]
    if b"{{" in request.body:
        texts.append(request.body.decode("utf-8", errors="replace"))
    uses.extend((m.group(1), None) for text in texts for m in PLACEHOLDER.finditer(text))
    return uses


def request_placeholders(request: Request) -> list[str]:
    """The NAME of each `{{NAME}}` in the request's target, header values and body."""
    texts = [request.target, *(value for _, value in request.headers)]
    if b"{{" in request.body:
        texts.append(request.body.decode("utf-8", errors="replace"))
    return [m.group(1) for text in texts for m in PLACEHOLDER.finditer(text)]


def fill_placeholders(
    request: Request, variables: Mapping[str, str], *, path: str = "", line: int | None = None
) -> Request:
    """`request` with each `{{NAME}}` in its target, header values and body replaced, and
    each literal escaped outside JSON (`\\{\\{NAME\\}\\}`) as it was sent (`{{NAME}}`).

    In the target the value is percent-encoded where a URL needs it; in a JSON body it is
    JSON-escaped (placeholders stand inside strings). A value that cannot go where its
    placeholder stands (a line break in a header) is a `RecorderError` naming path:line.
    """

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise MissingVariableError(name, path=path, line=line)
        return variables[name]

    def in_target(match: re.Match[str]) -> str:
        return quote(value_of(match), safe="!#$&'()*+,/:;=?@[]~%")

    def in_json(match: re.Match[str]) -> str:
        return json.dumps(value_of(match), ensure_ascii=False)[1:-1]

    def in_form(match: re.Match[str]) -> str:
        return quote_plus(value_of(match))

    target = request.target
    if _braces(target):
        target = literal_text(PLACEHOLDER.sub(in_target, target))
    headers = request.headers
    if any(_braces(value) for _, value in headers):
        try:
            headers = Headers([(n, literal_text(PLACEHOLDER.sub(value_of, v))) for n, v in headers])
        except ValueError as exc:
            where = path if line is None else f"{path}:{line}"
            raise RecorderError(f"{where}: a placeholder's value cannot be sent: {exc}") from None
    body = request.body
    if b"{{" in body or b"\\{\\{" in body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass  # binary bodies hold no placeholders
        else:
            if request.is_json and _is_json_text(text):
                body = PLACEHOLDER.sub(in_json, text).encode()
            else:
                # the recorder took the value out of a form body
                fill = in_form if is_form(request.headers.get("Content-Type")) else value_of
                body = literal_text(PLACEHOLDER.sub(fill, text)).encode()
    if target is request.target and headers is request.headers and body is request.body:
        return request
    return replace(request, target=target, headers=headers, body=body)


def fill_reply_placeholders(
    response: Response, variables: Mapping[str, str], names: Iterable[str]
) -> Response:
    """A recorded reply with each `{{NAME}}` of `names` whose variable is set replaced by its
    value, as it is compared: the recorder (and --update) write a secret that an agent echoes
    (a token in a message) as its placeholder. Other `{{...}}` text is the agent's own and
    stays as written, as does a placeholder whose variable is not set. A literal escaped
    outside JSON (`\\{\\{NAME\\}\\}`) is compared as it was sent (`{{NAME}}`), in the
    headers and body and in a gRPC call's trailers."""
    if (
        b"{{" not in response.body
        and b"\\{\\{" not in response.body
        and not any(_braces(value) for _, value in (*response.headers, *response.trailers))
    ):
        return response
    known = {name: variables[name] for name in names if name in variables}

    def plain(match: re.Match[str]) -> str:
        return known.get(match.group(1), match.group())

    def in_json(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            return match.group()
        return json.dumps(known[name], ensure_ascii=False)[1:-1]

    def in_header(match: re.Match[str]) -> str:
        # (a live header value is read as the recorder reads one:
        # `recorder.format.model.header_text`)
        value = known.get(match.group(1))
        if value is None:
            return match.group()
        return header_text(value.encode("utf-8", "surrogateescape"))

    def filled(text: str, *, is_json: bool) -> str:
        if not _braces(text):
            return text
        if is_json:
            return PLACEHOLDER.sub(in_json, text) if known else text
        return literal_text(PLACEHOLDER.sub(plain, text) if known else text)

    def filled_headers(fields: Headers) -> Headers:
        if not any(_braces(value) for _, value in fields):
            return fields
        try:
            return Headers(
                [
                    (n, literal_text(PLACEHOLDER.sub(in_header, v)) if _braces(v) else v)
                    for n, v in fields
                ]
            )
        except ValueError:  # a value that cannot be a header value (a line break): as written
            return fields

    headers = filled_headers(response.headers)
    trailers = filled_headers(response.trailers)  # (a gRPC call's trailing metadata)
    if trailers is not response.trailers:
        response = replace(response, trailers=trailers)
    if response.events is not None:
        events = tuple(
            replace(
                event,
                data=event.data
                if event.data is None or not _braces(event.data)
                else filled(event.data, is_json=_is_json_text(event.data)),
                id=None if event.id is None else filled(event.id, is_json=False),
            )
            for event in response.events
        )
        return response.with_content(headers, events=events)
    try:
        text = response.body.decode("utf-8")
    except UnicodeDecodeError:
        return response.with_content(headers, body=response.body)
    is_json = response.is_json and _is_json_text(text)
    body = filled(text, is_json=is_json).encode("utf-8", "surrogateescape")
    return response.with_content(headers, body=body)


def _braces(text: str) -> bool:
    """Whether `text` may hold a placeholder or an escaped literal (`recorder.format.literals`)."""
    return "{{" in text or "\\{\\{" in text


def _is_json_text(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def transcript_placeholders(transcript: Transcript) -> set[str]:
    """The NAME of each `{{NAME}}` in the transcript's requests and replies."""
    names: set[str] = set()
    for exchange in transcript.exchanges:
        names.update(request_placeholders(exchange.request))
        response = exchange.response
        texts = [value for _, value in response.headers]
        if response.events is not None:
            texts.extend(e.data for e in response.events if e.data and "{{" in e.data)
        elif b"{{" in response.body:
            texts.append(response.body.decode("utf-8", errors="replace"))
        names.update(m.group(1) for text in texts for m in PLACEHOLDER.finditer(text))
    return names


def secret_values(variables: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """value -> placeholder name, for `scrub_text` (which looks for each spelling of a value):
    the values the environment sets for `names`."""
    return {variables[n]: n for n in names if variables.get(n)}


def scrub_mismatch(mismatch: Mismatch, secrets: Mapping[str, str]) -> Mismatch:
    """`mismatch` with the `secrets` (value -> placeholder name) scrubbed from what it shows."""

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return scrub_text(value, secrets)
        if isinstance(value, dict):
            return {name: scrub(item) for name, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    return replace(
        mismatch,
        path=scrub_text(mismatch.path, secrets),
        expected=scrub(mismatch.expected),
        actual=scrub(mismatch.actual),
        message=scrub_text(mismatch.message, secrets),
    )


def secret_placeholders(transcript: Transcript, rules: Rules) -> set[str]:
    """The placeholders that stand for secrets: the rules' ({{A2A_TOKEN}}), and any the
    transcript's requests use where a secret goes (a secret header, a secret member's value,
    a secret query parameter)."""
    names = {
        *rules.secret_headers.values(),
        *rules.secret_fields.values(),
        *rules.secret_url_fields.values(),
        PUSH_URL_SECRET,
    }
    secret_headers = rules.secret_headers.keys()
    # (field names match in any case, as the recorder matches them)
    secret_fields = frozenset(name.lower() for name in rules.secret_fields)
    for exchange in transcript.exchanges:
        request = exchange.request
        for name, value in request.headers:
            if name.lower() in secret_headers and "{{" in value:
                names.update(m.group(1) for m in PLACEHOLDER.finditer(value))
        if "{{" in request.target and secret_fields:
            names.update(
                _secret_parameter_placeholders(request.target.partition("?")[2], secret_fields)
            )
        if b"{{" not in request.body or not secret_fields:
            continue
        if request.json is not None:
            names.update(_secret_member_placeholders(request.json, secret_fields))
        elif is_form(request.headers.get("Content-Type")):
            form = request.body.decode("utf-8", errors="replace")
            names.update(_secret_parameter_placeholders(form, secret_fields))
    return names


def _secret_parameter_placeholders(query: str, fields: frozenset[str]) -> set[str]:
    found: set[str] = set()
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key.lower() in fields:
            found.update(m.group(1) for m in PLACEHOLDER.finditer(value))
    return found


def _secret_member_placeholders(value: Any, fields: frozenset[str]) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                if key.lower() in fields and isinstance(member, str):
                    found.update(m.group(1) for m in PLACEHOLDER.finditer(member))
                else:
                    stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)
    return found
