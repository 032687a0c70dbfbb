"""Naming and numbering of transcript files (pure, no I/O).

`operation_name` (the A2A operation a request calls; `operation_of` from its parts),
`exchange_title`, `slugify` (a scenario name made safe as a file name, one file per name:
hashed when the slug loses part of it), `operation_slug`, `next_number` and
`file_name` (`NN-slug.http`, numbering after the highest number already in the folder), and
`header_case` (conventional spelling of lowercase header names).
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from recorder.bindings import grpc as grpc_binding
from recorder.bindings import jsonrpc, operations, rest
from recorder.format.model import GRPC_METHOD, Request

__all__ = [
    "NUMBERED",
    "exchange_title",
    "file_name",
    "header_case",
    "next_number",
    "operation_name",
    "operation_of",
    "operation_slug",
    "slugify",
]

# a transcript's name: `NN-slug.http`, its number first
NUMBERED = re.compile(r"^(\d+)-.*\.http$")
_MAX_SLUG = 60
_HASHED = 8  # hex digits of the hash that ends a cut slug

# the card, as the proxy tells it (`_quick_operation`): under any prefix, like the REST routes
# (`recorder.bindings.rest`); 0.3's path at the root only
_CARD_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(re.escape(operations.AGENT_CARD_PATH) + "$"), "GetAgentCard"),
    ("GET", re.compile("^" + re.escape(operations.LEGACY_AGENT_CARD_PATH) + "$"), "GetAgentCard"),
)
_JSONRPC_METHOD = re.compile(r"[\w./:-]{1,80}")

# spellings that simple capitalisation gets wrong (RFC 9110 and A2A §3.2.6 spell them so)
_HEADER_SPELLING = {
    "a2a-version": "A2A-Version",
    "a2a-extensions": "A2A-Extensions",
    "x-a2a-extensions": "X-A2A-Extensions",
    "etag": "ETag",
    "www-authenticate": "WWW-Authenticate",
    "te": "TE",
    "dnt": "DNT",
    "content-md5": "Content-MD5",
    "x-api-key": "X-API-Key",
    "x-a2a-notification-token": "X-A2A-Notification-Token",  # (a push delivery's)
    "x-request-id": "X-Request-ID",
    "x-xss-protection": "X-XSS-Protection",
}


@functools.lru_cache(maxsize=1024)  # the same few names come in every exchange
def header_case(name: str) -> str:
    """`content-type` -> `Content-Type`, `a2a-version` -> `A2A-Version`, `etag` -> `ETag`."""
    known = _HEADER_SPELLING.get(name.lower())
    if known is not None:
        return known
    if name != name.lower():
        return name  # someone chose a spelling: keep it
    return "-".join(part[:1].upper() + part[1:] for part in name.split("-"))


def operation_name(request: Request) -> str:
    """The A2A operation a request calls: the JSON-RPC `method`, the REST route's operation,
    `GetAgentCard` for the card, else `METHOD /path`."""
    value = request.json if request.method == "POST" and request.is_json else None
    return operation_of(request.method, request.path, value)


def operation_of(method: str, path: str, value: Any) -> str:
    """`operation_name` of a request given by its parts: `value` is its body parsed (None
    unless a POST with a JSON body)."""
    if method == GRPC_METHOD:  # a gRPC call: its method's name
        return grpc_binding.method_of(path) or f"{method} {path}"
    called = jsonrpc.method_of(value)
    if called is not None and _JSONRPC_METHOD.fullmatch(called):
        return called
    routed = rest.operation_of(method, path)
    if routed is not None:
        return routed
    for verb, pattern, name in _CARD_ROUTES:
        if method == verb and pattern.search(path):
            return name
    return f"{method} {path}"


def exchange_title(request: Request, description: str | None = None) -> str:
    """`GetTask` or `GetTask: read the review back` (one line)."""
    title = operation_name(request)
    if description:
        text = " ".join(description.split())
        if text:
            title = f"{title}: {text}"
    return title


@functools.lru_cache(maxsize=1024)  # a scenario's name is slugged several times per request
def slugify(name: str) -> str:
    """A scenario's name as a file-name slug: lowercase ASCII letters, digits and single
    dashes; no separators, no dots (so no `..`), at most 60 characters.

    A name is one file for good, and two names never share one: a name that is its own slug
    (`message-reply`) is the slug; any other (`Checkout flow`, `checkout/flow`: the slug
    `checkout-flow` would lose what told them apart) and any slug over 60 characters end with
    8 hex digits of a hash of the whole name (`checkout-flow-263aa274`), so names that differ
    only in what the slug drops, or past the cut (test ids of one module), never share a
    file. Raises ValueError when nothing usable is left."""
    slug = _words(name)
    if slug == name and len(slug) <= _MAX_SLUG:
        return slug
    # (a long name that is its own slug hashes the same text as before the hash was the
    # name's: its file keeps its name)
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASHED]
    return slug[: _MAX_SLUG - _HASHED - 1].rstrip("-") + "-" + digest


def _words(name: str) -> str:
    """`name`'s letters and digits as a lowercase slug (lossy: `Checkout flow` and
    `checkout/flow` are both `checkout-flow`). Raises ValueError when none is left."""
    # accents off (`Überprüfung` -> `Uberprufung`, not `berpr-fung`); other letters drop out
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    # CamelCase -> camel-case, so operation names read well
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", plain)
    slug = re.sub(r"[^a-z0-9]+", "-", spaced.lower()).strip("-")
    if not slug:
        raise ValueError(f"cannot make a file name from {name!r}: use letters or digits")
    return slug


def operation_slug(operation: str) -> str:
    """`GetTask` -> `get-task`; `GET /foo/bar` -> `get-foo-bar` (a conversation's file is
    its own, numbered: its slug only reads well, unhashed up to 60 characters)."""
    try:
        slug = _words(operation)
    except ValueError:
        return "exchange"
    if len(slug) <= _MAX_SLUG:
        return slug
    digest = hashlib.sha256(slug.encode("ascii")).hexdigest()[:_HASHED]
    return slug[: _MAX_SLUG - _HASHED - 1].rstrip("-") + "-" + digest


def next_number(names: Iterable[str]) -> int:
    """One more than the highest `NN` of the `NN-slug.http` names given (1 when there is none)."""
    highest = 0
    for name in names:
        match = NUMBERED.match(name)
        if match:
            highest = max(highest, int(match.group(1)))
    return highest + 1


def file_name(number: int, slug: str) -> str:
    return f"{number:02d}-{slug}.http"
