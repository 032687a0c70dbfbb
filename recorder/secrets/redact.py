"""Secrets -> replayable placeholders, before anything reaches the disk.

Pure: values in, values out. The names of what is secret are arguments (the rules file decides
them; `DEFAULT_SECRET_HEADERS` are the defaults), each mapped to the placeholder it becomes.

- A secret header keeps its shape where the shape carries meaning and no secret:
  `Authorization: Bearer abc` -> `Authorization: Bearer {{A2A_TOKEN}}` (the scheme is kept,
  RFC 9110 §11.4 `credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ]`);
  `Set-Cookie: sid=abc; Path=/; HttpOnly` -> `Set-Cookie: sid={{SET_COOKIE}}; Path=/; HttpOnly`
  (the attributes after the first `;` are not secret, RFC 6265 §4.1.1). Any other secret header
  becomes the placeholder alone.
- A secret JSON member (by name, in any case, at any depth) gets the placeholder as its value;
  so does a secret query parameter or form field. With no rules file the names are
  `DEFAULT_SECRET_FIELDS`: the A2A push config's `token` and `authentication.credentials`, and
  the usual names of secrets (`api_key`, `password` ...).
- Secrets in less obvious places (issue 24): every value of a secret member named twice in
  one object (`{"password": "S1", "password": "S2"}`: both kept, both placeholders); a secret
  query parameter of a URL inside a JSON string (`"url": "https://h/cb?token=..."`); a
  `multipart/form-data` field of a secret name; JSON inside a JSON string (`"params":
  "{\"password\": ...}"`, redacted and written back compact); and a path segment that looks
  like a secret (`looks_secret`: long, letters and digits, no UUID) of a push config's `url`
  (an object holding `url` beside `token`, `authentication` or `taskId`, or under a member
  whose name holds "push") or of a member the rules name in `secret_url_fields`: it becomes
  `{{PUSH_URL_SECRET}}` (or the rules' placeholder), which the player fills with a stand-in.
- And (issue 34): the `-bin` twin of a secret header (gRPC's binary metadata,
  `authorization-bin`: `{{AUTHORIZATION_BIN}}`, its value decoded scrubbed too); a file's
  bytes in base64 (`Part.raw`, 0.3's `file.bytes`), redacted as a body of the part's media
  type and re-encoded; a secret parameter of a URL inside free text (`call
  https://h/cb?token=... back`: the value up to a space, a sentence's last mark left out),
  in a JSON string or a `text/*` body; a URL's credentials in any string (`https://user:
  password@host`: `{{URL_CREDENTIALS}}`, and what Basic auth would make of them scrubbed).
- Every secret value seen on the way (`Redactor.seen`) is also scrubbed from the whole text of
  a transcript before it is written (`scrub_text`: `recorder.secrets.scrub`, re-exported here): an
  agent that echoes a token in a body or an error message does not leak it either. Inside
  longer text only from 6 characters (a shorter one would match at random); where it is a
  whole value (a JSON string, a header value, a query or form value), whatever its length.

The player fills `{{NAME}}` from the environment variable NAME (a literal:
`recorder.format.literals`).
"""

from __future__ import annotations

import base64
import functools
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recorder.format.literals import (
    PLACEHOLDER,
    escape_body,
    escape_event,
    escape_json_text,
    escape_text,
)
from recorder.format.model import Headers, Response, is_json_media_type
from recorder.format.sse import SseEvent
from recorder.secrets.places import (
    BASE64_MEMBERS,
    JSON_STARTS,
    URL_CREDENTIALS,
    Pairs,
    base64_bytes,
    base64_text,
    dumps_pairs,
    is_text,
    loads_pairs,
    looks_secret,
    may_hide_credentials,
    media_type,
    multipart_boundary,
    redact_multipart,
    redact_parameters_in_text,
    redact_userinfo,
)
from recorder.secrets.scrub import (
    _MIN_SCRUB_LENGTH,
    placeholder,
    placeholder_name,
    scrub_bytes,
    scrub_response,
    scrub_text,
    with_spellings,
)

__all__ = [
    "DEFAULT_SECRET_FIELDS",
    "DEFAULT_SECRET_HEADERS",
    "PLACEHOLDER",
    "PUSH_URL_SECRET",
    "URL_CREDENTIALS",
    "Redactor",
    "is_form",
    "looks_secret",
    "placeholder",
    "placeholder_name",
    "scrub_bytes",
    "scrub_response",
    "scrub_text",
    "secret_names",
    "with_spellings",
]

# header name (lowercase) -> placeholder name
DEFAULT_SECRET_HEADERS: Mapping[str, str] = {
    "authorization": "A2A_TOKEN",
    "proxy-authorization": "PROXY_AUTHORIZATION",
    "cookie": "COOKIE",
    "set-cookie": "SET_COOKIE",
    "x-api-key": "X_API_KEY",
}
# JSON member / query or form parameter name (any case) -> placeholder name: the A2A places
# (a push config's `token` and `authentication.credentials`) and the usual names of secrets
DEFAULT_SECRET_FIELDS: Mapping[str, str] = {
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

# the placeholder of a secret-looking path segment of a push config's `url`
PUSH_URL_SECRET = "PUSH_URL_SECRET"
# the members beside `url` that make an object a push config (A2A TaskPushNotificationConfig)
_PUSH_CONFIG_SIBLINGS = ("token", "authentication", "taskId", "taskid")

# the schemes whose parameter is one credential that the placeholder stands for
_SCHEMED_HEADERS = frozenset({"authorization", "proxy-authorization"})
_SCHEME = re.compile(r"^([!#$%&'*+\-.^_`|~0-9A-Za-z]+)[ \t]+(\S.*)$")
# HTTP authentication schemes (IANA registry, and the common `Token`): one of these alone is
# a header without credentials; any other lone value may be a raw key, so it is secret
_SCHEMES = frozenset(
    {"basic", "bearer", "digest", "dpop", "hoba", "mutual", "negotiate", "ntlm", "token"}
)
# `"name": "value"` in JSON text: 1 the part before the value, 2 the name, 4 the value (its
# escapes as written), 5 the closing quote
_JSON_MEMBER = re.compile(r'("((?:[^"\\]|\\.)*)"\s*:\s*")(((?:[^"\\]|\\.)*))(")')
# a cookie value is scrubbed from free text only from this length, and not when it is letters
# only: cookies carry preferences (`theme=review`) as well as sessions
_MIN_COOKIE_SCRUB_LENGTH = 8


def secret_names(names: Mapping[str, str] | Iterable[str], *, fold: bool) -> dict[str, str]:
    """Normalize `names` (a mapping name -> placeholder, or plain names) to a dict.

    `fold` lowercases the names (HTTP header names are case-insensitive; JSON names are not).
    """
    if isinstance(names, Mapping):
        pairs = [(str(k), str(v)) for k, v in names.items()]
    else:
        pairs = [(str(n), placeholder_name(str(n))) for n in names]
    return {(k.lower() if fold else k): v for k, v in pairs}


def is_form(content_type: str | None) -> bool:
    """Whether a body is `application/x-www-form-urlencoded`."""
    media = (content_type or "").partition(";")[0].strip().lower()
    return media == "application/x-www-form-urlencoded"


@dataclass
class Redactor:
    """Redacts the parts of one exchange and remembers the secret values it took out."""

    headers: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SECRET_HEADERS))
    fields: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SECRET_FIELDS))
    # secret value -> placeholder name, for `scrub_text`
    seen: dict[str, str] = field(default_factory=dict)
    # member name -> placeholder: the URL in such a member has its secret-looking path segments
    # replaced (a push config's `url` always: `PUSH_URL_SECRET`)
    url_fields: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.headers = secret_names(self.headers, fold=True)
        # field names match in any case: `Password`, `API_KEY`
        self.fields = secret_names(self.fields, fold=True)
        self.url_fields = secret_names(self.url_fields, fold=True)
        self._names_pattern()  # made once: each `fresh` copy has it

    def _names_pattern(self) -> re.Pattern[bytes]:
        """`_field_names_pattern` of the field names, kept with the names it was made of."""
        cached = self.__dict__.get("_names_cache")
        if cached is None or cached[0] is not self.fields:
            cached = (
                self.fields,
                _field_names_pattern(tuple(self.fields), tuple(self.url_fields)),
            )
            self.__dict__["_names_cache"] = cached
        pattern: re.Pattern[bytes] = cached[1]
        return pattern

    @property
    def member_names(self) -> frozenset[str]:
        """Every member name (lowercase) that makes a JSON body one to redact: the secret
        fields, the URL fields, `url`, and a file's base64 bytes (`raw`, `bytes`) (the
        writer's direct path leaves such bodies to the general one); the same value while
        `fields` is the same."""
        cached = self.__dict__.get("_members_cache")
        if cached is None or cached[0] is not self.fields:
            names = frozenset(
                {*(n.lower() for n in self.fields), *self.url_fields, "url", *BASE64_MEMBERS}
            )
            cached = (self.fields, names)
            self.__dict__["_members_cache"] = cached
        members: frozenset[str] = cached[1]
        return members

    def may_hide_credentials(self, body: bytes) -> bool:
        """Whether `body` may hold a URL with credentials (`scheme://user:password@`), which
        the JSON walk redacts in any string (the writer's direct path asks before it writes
        a body as it came)."""
        return may_hide_credentials(body)

    def fresh(self) -> Redactor:
        """A Redactor with the same secret names and nothing seen yet (one per exchange; the
        names are not normalized again)."""
        clone = Redactor.__new__(Redactor)  # (copy.copy goes through __reduce_ex__: slower)
        clone.__dict__.update(self.__dict__)
        clone.seen = {}
        return clone

    # ---------------------------------------------------------------- headers

    def header_env(self, folded: str) -> str | None:
        """The placeholder name of the header `folded` (lowercase) when it is secret: one of
        `headers`, or the `-bin` twin of one (gRPC's binary metadata, `authorization-bin`:
        its base64 value gets a placeholder of its own, `AUTHORIZATION_BIN`); else None."""
        env = self.headers.get(folded)
        if env is None and folded.endswith("-bin") and folded[:-4] in self.headers:
            return placeholder_name(folded)
        return env

    def redact_headers(self, headers: Headers) -> Headers:
        secret = self.headers
        if not any(
            name.lower() in secret
            or (name.lower().endswith("-bin") and name.lower()[:-4] in secret)
            or "{{" in value
            for name, value in headers
        ):
            return headers
        return Headers([(n, self._header_value(n, v)) for n, v in headers])

    def _header_value(self, name: str, value: str) -> str:
        folded = name.lower()
        env = self.header_env(folded)
        if env is None or not value:
            return escape_text(value)
        if folded not in self.headers:  # a `-bin` twin: base64 of the secret's bytes
            self._remember(value, env)
            decoded = base64_text(value)
            if decoded is not None:  # (an agent may echo it decoded)
                self._remember(decoded, env)
            return placeholder(env)
        if folded in _SCHEMED_HEADERS:
            match = _SCHEME.match(value)
            if match:
                self._remember(match.group(2), env)
                return f"{match.group(1)} {placeholder(env)}"
            if value.strip().lower() in _SCHEMES:
                # `Bearer` with no credentials (a client whose token is unset): nothing secret,
                # and scrubbing the word "Bearer" from every file would break them all
                return value
        elif folded == "cookie":
            # each cookie's value too: an agent may echo one alone (`sid` in an error body);
            # not one that reads like a word (`theme=review`), which would match ordinary text
            for pair in value.split(";"):
                self._remember_cookie(pair.partition("=")[2].strip(), env)
        elif folded == "set-cookie":
            pair, sep, attributes = value.partition(";")
            cookie_name, eq, cookie_value = pair.partition("=")
            if eq:
                self._remember_cookie(cookie_value.strip(), env)
                attributes = escape_text(attributes)
                return f"{cookie_name.strip()}={placeholder(env)}{sep}{attributes}"
        self._remember(value, env)
        return placeholder(env)

    def _remember_cookie(self, value: str, env: str) -> None:
        if len(value) >= _MIN_COOKIE_SCRUB_LENGTH and not value.isalpha():
            self._remember(value, env)

    # ---------------------------------------------------------------- target

    def redact_target(self, target: str) -> str:
        """Secret query parameters -> placeholders (`?api_key={{API_KEY}}`). Only their values
        change: every other byte of the query is kept as the client sent it (`%2b`, `+`,
        `a&b=`), so the recorded target is the one forwarded; a literal `{{NAME}}` escaped."""
        target = escape_text(target)
        path, question, query = target.partition("?")
        if not question or not self.fields:
            return target
        redacted = self._redact_form(query)
        return f"{path}?{redacted}" if redacted is not query else target

    def _redact_form(self, query: str) -> str:
        """`name=value&...` (a query, or a form body) with secret parameters' values replaced;
        the same string when none is there."""
        parts = query.split("&")
        changed = False
        for n, part in enumerate(parts):
            raw_name, eq, raw_value = part.partition("=")
            env = self.fields.get(urllib.parse.unquote_plus(raw_name).lower())
            if env is None or not eq:
                continue
            # both spellings: the agent may echo the value decoded or as it was sent
            self._remember(urllib.parse.unquote_plus(raw_value), env)
            self._remember(raw_value, env)
            # braces are kept readable: the player fills them before it sends
            parts[n] = f"{raw_name}={placeholder(env)}"
            changed = True
        return "&".join(parts) if changed else query

    # ---------------------------------------------------------------- bodies

    def redact_json_value(self, value: Any, *, push: bool = False) -> Any:
        """A copy of a parsed JSON value with every secret member's value replaced; a member
        named twice (`Pairs`, from `loads_pairs`) keeps both, each redacted. `push`: `value` is
        held by a member whose name holds "push" (a push config, or a list of them)."""
        if isinstance(value, dict | Pairs):
            items = value if isinstance(value, Pairs) else value.items()
            keys = {key for key, _ in items} if isinstance(value, Pairs) else value
            push_config = "url" in keys and (push or any(k in keys for k in _PUSH_CONFIG_SIBLINGS))
            pairs: list[tuple[Any, Any]] = []
            for key, item in items:
                folded = key.lower() if isinstance(key, str) else ""
                env = self.fields.get(folded)
                url_env = self.url_fields.get(folded)
                if url_env is None and push_config and key == "url":
                    url_env = PUSH_URL_SECRET
                if env is not None and item is not None and not isinstance(item, dict | list):
                    self._remember_scalar(item, env)
                    pairs.append((key, placeholder(env)))
                elif env is not None and isinstance(item, dict | list | Pairs):
                    # a structured secret: every scalar inside it is secret
                    pairs.append((key, _replace_scalars(item, env, self._remember_scalar)))
                elif url_env is not None and isinstance(item, str):
                    pairs.append((key, self._redact_url(item, url_env)))
                elif folded in BASE64_MEMBERS and isinstance(item, str) and item:
                    pairs.append((key, self._redact_base64(item, media_type(items))))
                else:
                    pairs.append((key, self.redact_json_value(item, push="push" in folded)))
            return Pairs(pairs) if isinstance(value, Pairs) else dict(pairs)
        if isinstance(value, list):
            return [self.redact_json_value(item, push=push) for item in value]
        if isinstance(value, str) and value:
            return self._redact_string(value)
        return value

    def _redact_string(self, text: str) -> str:
        """A JSON string that may hide a secret: JSON text (its secret members, written back
        compact), a URL or query with secret parameters (`https://h/cb?token=...`), such a URL
        inside free text (`call https://h/cb?token=... back`: each secret parameter's value,
        up to a space), a URL's credentials (`https://user:password@host`)."""
        if text[0] in JSON_STARTS and text.lstrip()[:1] in ("{", "["):
            redacted = self._redact_json_document(text)
            if redacted is not None:
                return redacted
        if "@" in text and "://" in text:
            text = self._redact_userinfo(text)
        if "=" in text and ("?" in text or "&" in text):
            if any(c.isspace() for c in text):
                return self._redact_parameters_in_text(text)
            return self._redact_query_in(text)
        return text

    def _redact_userinfo(self, text: str) -> str:
        """`text` with each URL's credentials made `{{URL_CREDENTIALS}}` (`secret_places`)."""
        return redact_userinfo(text, self._remember)

    def _redact_parameters_in_text(self, text: str) -> str:
        """Free text with each secret parameter of a URL in it made its placeholder."""
        if not self.fields:
            return text
        return redact_parameters_in_text(text, self.fields, self._remember)

    def _redact_base64(self, data: str, content_type: str | None) -> str:
        """A file's bytes in base64 (`Part.raw`) with the secrets inside redacted as a body of
        `content_type` (JSON members, form and multipart fields, a URL's in text) and the
        secrets seen so far in the exchange taken out; re-encoded when that changed them,
        else as it was (and as it was when it is no base64)."""
        decoded = base64_bytes(data)
        if decoded is None:
            return data
        redacted = self._redact_secrets_in(decoded, content_type)
        if self.seen:
            redacted = scrub_bytes(redacted, self.seen)
        if redacted == decoded:
            return data
        return base64.b64encode(redacted).decode("ascii")

    def _redact_query_in(self, text: str) -> str:
        """The secret parameters of the query of a URL (or of a bare query) in `text`."""
        head, question, rest = text.partition("?")
        if not question:
            head, rest = "", head
        query, hash_, fragment = rest.partition("#")
        redacted = self._redact_form(query)
        if redacted is query:
            return text
        return f"{head}{question}{redacted}{hash_}{fragment}"

    def redact_push_url(self, url: str) -> str:
        """A push webhook's URL or target (`/hook/...`) as a push config's `url` is redacted:
        secret-looking path segments -> `{{PUSH_URL_SECRET}}`, secret query values too."""
        return self._redact_url(url, PUSH_URL_SECRET)

    def _redact_url(self, url: str, env: str) -> str:
        """A URL whose secret-looking path segments (`looks_secret`) become `{{env}}`, and
        whose secret query parameters become theirs."""
        url = self._redact_string(url) if url else url
        rest, question, query = url.partition("?")
        scheme, sep, tail = rest.partition("://")
        if not sep:
            scheme, sep, tail = "", "", rest
        host, slash, path = tail.partition("/")
        if not slash:
            return url
        segments = path.split("/")
        changed = False
        for n, segment in enumerate(segments):
            if looks_secret(segment):
                self._remember(segment, env)
                self._remember(urllib.parse.unquote(segment), env)
                segments[n] = placeholder(env)
                changed = True
        if not changed:
            return url
        return f"{scheme}{sep}{host}/{'/'.join(segments)}{question}{query}"

    def _redact_json_document(self, text: str | bytes) -> str | None:
        """The JSON text `text` with its secrets replaced (compact), None when it is no JSON
        or holds no secret."""
        try:
            value = loads_pairs(text)
        except (ValueError, RecursionError):
            return None
        redacted = self.redact_json_value(value)
        if redacted == value:  # (`Pairs` compare as their lists of pairs)
            return None
        try:
            return self._written(redacted)
        except RecursionError:
            return None

    def redact_body(self, body: bytes, content_type: str | None) -> bytes:
        """Secret JSON members out of a JSON body (returned compact; the model pretty-prints).
        A body that is JSON under another media type (or none) counts too: a client that
        forgets Content-Type must not write its secrets to the disk. A body that looks like
        JSON but does not parse has its secret members' string values replaced in the text.
        A form body's and a multipart form's secret fields are replaced too. A body that is no
        UTF-8 text (written base64, where the transcript's text scrub cannot see) has the
        secrets seen so far replaced in its bytes."""
        if not body:
            return body
        body = escape_body(body, content_type) if b"{{" in body else body
        return self._redact_secrets_in(body, content_type)

    def _redact_secrets_in(self, body: bytes, content_type: str | None) -> bytes:
        """`redact_body` but for the literals' escape (a part's base64 bytes: no `{{` in them
        reads as a placeholder, and bytes without a secret stay as they were sent)."""
        if self.fields and (
            is_json_media_type(content_type) or body[:64].lstrip()[:1] in (b"{", b"[")
        ):
            if self._may_name_a_field(body):
                body = self._redact_json_body(body)
        elif self.fields and is_form(content_type):
            text = body.decode("latin-1")  # percent-encoded ASCII; any other byte kept
            redacted = self._redact_form(text)
            if redacted is not text:
                body = redacted.encode("latin-1")
        elif self.fields and multipart_boundary(content_type) is not None:
            body = self._redact_multipart(body, multipart_boundary(content_type) or b"")
        elif self.fields and is_text(content_type) and b"=" in body:
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                redacted = self._redact_parameters_in_text(self._redact_userinfo(text))
                if redacted != text:
                    body = redacted.encode("utf-8")
        if self.seen and not body.isascii():  # (ASCII is UTF-8: the quick common case)
            try:
                body.decode("utf-8")
            except UnicodeDecodeError:
                body = scrub_bytes(body, self.seen)
        return body

    def _redact_multipart(self, body: bytes, boundary: bytes) -> bytes:
        """`multipart/form-data` (RFC 7578): a part whose field name is secret gets its
        placeholder as its content; any other part is redacted as a body of its own type."""

        def redact_part(name: str, content_type: str | None, value: bytes) -> bytes:
            env = self.fields.get(name.lower())
            if env is None:
                return self.redact_body(value, content_type)
            self._remember(value.decode("utf-8", "replace"), env)
            self._remember(value.decode("latin-1"), env)
            return placeholder(env).encode()

        return redact_multipart(body, boundary, redact_part)

    def _may_name_a_field(self, body: bytes) -> bool:
        """False when `body` cannot hold a secret member: no escape (so a member name is
        written as it is, and no JSON inside a string), no NUL (so it is no UTF-16 or UTF-32,
        which `json` reads too), no KELVIN SIGN (the one character besides ASCII that
        `str.lower` folds to ASCII: `K`), no secret name in quotes or as a query parameter
        (`?token=`), in any ASCII case, and no `"url"` member (a push config's). Saves parsing
        and walking the JSON of nearly every body, in any language."""
        if b"\\" in body or b"\x00" in body or (not body.isascii() and _KELVIN in body):
            return True
        # lowercase names in bytes lowercased (ASCII only, the rest is kept): what a
        # case-blind search finds, ~2x faster
        return self._names_pattern().search(body.lower()) is not None

    def _redact_json_body(self, body: bytes) -> bytes:
        try:
            value = loads_pairs(body)
        except (ValueError, RecursionError):
            return self._redact_json_text(body)
        redacted = self.redact_json_value(value)
        if redacted == value:  # (`Pairs` compare as their lists of pairs)
            return body
        try:
            return self._written(redacted).encode()
        except RecursionError:
            return self._redact_json_text(body)

    def _written(self, redacted: Any) -> str:
        """A redacted value written anew (compact), literals escaped again (RecursionError)."""
        text = dumps_pairs(redacted, ensure_ascii=False)
        if not text.isascii() and re.search("[\ud800-\udfff]", text):  # (no UTF-8: escaped)
            text = dumps_pairs(redacted, ensure_ascii=True)
        names = {*self.fields.values(), *self.url_fields.values(), PUSH_URL_SECRET, URL_CREDENTIALS}
        return escape_json_text(text, names)

    def _redact_json_text(self, body: bytes) -> bytes:
        """Secret members' string values replaced in JSON text that does not parse (a trailing
        comma, a byte that is no UTF-8): read as Latin-1, so every byte is kept as it was."""
        text = body.decode("latin-1")

        def replace_value(match: re.Match[str]) -> str:
            name = match.group(2)
            env = self.fields.get(name.lower())
            if env is None:
                return match.group()
            raw = match.group(4)
            try:
                value = json.loads(f'"{raw}"')
            except ValueError:
                value = raw
            self._remember(value.encode("latin-1", "replace").decode("utf-8", "replace"), env)
            self._remember(value, env)
            return f"{match.group(1)}{placeholder(env)}{match.group(5)}"

        return _JSON_MEMBER.sub(replace_value, text).encode("latin-1")

    def redact_events(self, events: Iterable[SseEvent]) -> tuple[SseEvent, ...]:
        """Secret JSON members out of each frame's `data:` JSON (literals escaped first)."""
        out = []
        for event in events:
            event = escape_event(event)
            if self.fields and event.data and self._may_name_a_field(event.data.encode()):
                data = self._redact_json_document(event.data)
                if data is not None:
                    event = SseEvent(data, event.event, event.id, event.retry, event.comments)
            out.append(event)
        return tuple(out)

    def redact_response(self, response: Response) -> Response:
        """A reply with its secret headers and secret JSON members (in the body, or in each
        frame of an event stream) made placeholders, as the recorder writes them."""
        headers = self.redact_headers(response.headers)
        if response.events is not None:
            events = self.redact_events(response.events)
            if headers is response.headers and events == response.events:
                return response
            return response.with_content(headers, events=events)
        body = self.redact_body(response.body, headers.get("Content-Type"))
        if headers is response.headers and body is response.body:
            return response
        return response.with_content(headers, body=body)

    def _remember_scalar(self, value: Any, env: str) -> None:
        """A secret member's scalar value: a string, or (as its JSON text, from where it is
        long enough to be looked for in text) a number; `true` is no secret."""
        if isinstance(value, str):
            self._remember(value, env)
        elif not isinstance(value, bool):
            text = json.dumps(value)
            if len(text) >= _MIN_SCRUB_LENGTH:
                self._remember(text, env)

    def _remember(self, value: str, env: str) -> None:
        if value.strip() and "{{" not in value:
            self.seen[value] = env


_KELVIN = "\u212a".encode()  # "\u212a".lower() == "k"


@functools.lru_cache(maxsize=8)
def _field_names_pattern(names: tuple[str, ...], url_names: tuple[str, ...]) -> re.Pattern[bytes]:
    """`"name"` for any of the secret field `names`, the `url_names` and `url` in lowercase,
    or `?name=` / `&name=` (a URL's query inside a string), to search in lowercased text; a
    name that is no ASCII matches any quote (the body is then always parsed)."""
    if not all(name.isascii() for name in (*names, *url_names)):
        return re.compile(b'"')
    members = b"|".join(
        re.escape(n.lower().encode("ascii"))
        for n in (*names, *url_names, "url", *sorted(BASE64_MEMBERS))
    )
    if not names:
        return re.compile(b'"(?:' + members + b')"')
    parameters = b"|".join(re.escape(name.lower().encode("ascii")) for name in names)
    # (and a URL's credentials: `://user:password@`)
    return re.compile(b'"(?:' + members + b')"|[?&](?:' + parameters + b')=|://[^\\s/?#@"]+@')


def _replace_scalars(value: Any, env: str, remember: Any) -> Any:
    if isinstance(value, Pairs):
        return Pairs((k, _replace_scalars(v, env, remember)) for k, v in value)
    if isinstance(value, dict):
        return {k: _replace_scalars(v, env, remember) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_scalars(v, env, remember) for v in value]
    if value is None or isinstance(value, bool):
        return value
    remember(value, env)
    return placeholder(env)
