"""Factories with fixed defaults: `make_exchange(**overrides)`."""

from __future__ import annotations

from typing import Any

from recorder import Exchange, Headers, Request, Response

JSON = Headers([("Content-Type", "application/json")])


def make_request(**overrides: Any) -> Request:
    fields: dict[str, Any] = {
        "method": "POST",
        "target": "/a2a/jsonrpc",
        "headers": Headers([("Content-Type", "application/json"), ("A2A-Version", "1.0")]),
        "body": b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-1"}}',
    }
    fields.update(overrides)
    return Request(**fields)


def make_response(**overrides: Any) -> Response:
    fields: dict[str, Any] = {
        "status": 200,
        "reason": "OK",
        "headers": JSON,
        "body": b'{"jsonrpc": "2.0", "id": 1, "result": {"id": "t-1"}}',
    }
    fields.update(overrides)
    return Response(**fields)


def make_exchange(**overrides: Any) -> Exchange:
    fields: dict[str, Any] = {
        "request": make_request(),
        "response": make_response(),
        "title": "GetTask",
    }
    fields.update(overrides)
    return Exchange(**fields)
