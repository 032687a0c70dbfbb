"""`# @push config N`: a push notification delivery's tag read, written, checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder import Exchange, Headers, ParseError, Request, Response, dumps, loads
from recorder.bindings.push_configs import config_objects, registers_push_config
from recorder.checking import check_paths

CREATE = (
    "### register a webhook\n"
    "POST /a2a/jsonrpc HTTP/1.1\n"
    "Content-Type: application/json\n"
    "\n"
    '{"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig", '
    '"params": {"taskId": "t1", "url": "http://127.0.0.1:9/hook", "token": "{{TOKEN}}"}}\n'
    "\n"
    "HTTP/1.1 200 OK\n"
    "\n"
)
DELIVERY = (
    "### push: task t1 WORKING\n"
    "# @push config 1\n"
    "POST /hook HTTP/1.1\n"
    "Content-Type: application/json\n"
    "X-A2A-Notification-Token: {{TOKEN}}\n"
    "\n"
    "{}\n"
    "\n"
    "HTTP/1.1 200 OK\n"
)
PLAIN = "### plain\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n\n"


def test_the_tag_is_read_into_push_config_and_written_back_byte_for_byte() -> None:
    text = "# recorder-format: 1\n\n" + CREATE + DELIVERY
    transcript = loads(text)
    assert [e.push_config for e in transcript.exchanges] == [None, 1]
    assert transcript.exchanges[1].comments == ()
    canonical = dumps(transcript)  # (the JSON pretty-printed)
    assert "\n### push: task t1 WORKING\n# @push config 1\nPOST /hook HTTP/1.1\n" in canonical
    assert loads(canonical) == transcript
    assert dumps(loads(canonical)) == canonical


def test_the_writer_puts_the_tag_after_the_comments_and_before_truncated() -> None:
    request = Request(method="POST", target="/hook", headers=Headers([]))
    exchange = Exchange(
        request=request,
        response=Response(status=200),
        title="t",
        comments=("a note",),
        truncated=True,
        push_config=1,
    )
    lines = dumps_lines(exchange)
    assert lines[1:4] == ["# a note", "# @push config 1", "# @truncated"]


def dumps_lines(exchange: Exchange) -> list[str]:
    plain = Exchange(request=exchange.request, response=exchange.response)
    text = dumps(type(loads(""))(exchanges=(plain, exchange)))
    return text.split("\n###", 2)[2].split("\n")


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("# @push config 3", "@push config 3: no earlier exchange 3 (this is exchange 2)"),
        ("# @push config 2", "@push config 2: no earlier exchange 2 (this is exchange 2)"),
        ("# @push config 0", "@push config 0: no earlier exchange 0"),
        ("# @push config one", 'a @push tag reads "@push config N", got "@push config one"'),
        ("# @push", 'a @push tag reads "@push config N"'),
        ("# @push config 1\n# @push config 1", "a second @push tag"),
    ],
)
def test_a_tag_that_does_not_read_so_is_a_parse_error_at_its_line(tag: str, message: str) -> None:
    text = PLAIN + DELIVERY.replace("# @push config 1", tag)
    with pytest.raises(ParseError) as caught:
        loads(text, "f.http")
    assert message in caught.value.message
    at = PLAIN.count("\n") + 2 + (1 if tag.count("\n") else 0)
    assert caught.value.line == at


def test_other_comments_are_no_tags() -> None:
    text = PLAIN + "### b\n# @pushed by hand\n# push config 1\n" + PLAIN.split("\n", 1)[1]
    assert loads(text).exchanges[1].comments == ("@pushed by hand", "push config 1")
    assert loads(text).exchanges[1].push_config is None


def test_the_model_refuses_the_tag_as_a_comment_and_a_number_below_one() -> None:
    request, response = Request(method="GET", target="/"), Response(status=200)
    with pytest.raises(ValueError, match="is a tag"):
        Exchange(request=request, response=response, comments=("@push config 1",))
    with pytest.raises(ValueError, match="1-based"):
        Exchange(request=request, response=response, push_config=0)


def test_check_fails_a_tag_whose_exchange_registers_no_push_config(tmp_path: Path) -> None:
    good = tmp_path / "good.http"
    good.write_text(CREATE + DELIVERY)
    assert check_paths([good]) == (1, [])
    bad = tmp_path / "bad.http"
    bad.write_text(PLAIN + DELIVERY)
    count, problems = check_paths([bad])
    assert count == 1
    assert [(p.line, p.message.split(":")[0]) for p in problems] == [(6, "@push config 1")]
    assert "exchange 1 registers no push config" in problems[0].message


def _request(method: str, target: str, body: object) -> Request:
    return Request(
        method=method,
        target=target,
        headers=Headers([("Content-Type", "application/json")]),
        body=json.dumps(body).encode(),
        http_version="" if method == "GRPC" else "HTTP/1.1",
    )


GRPC_CREATE = (
    "### register a webhook over gRPC\n"
    "GRPC /lf.a2a.v1.A2AService/CreateTaskPushNotificationConfig\n"
    "a2a-version: 1.0\n"
    "\n"
    '{"taskId": "t1", "url": "http://127.0.0.1:9/hook", "token": "{{TOKEN}}"}\n'
    "\n"
    "GRPC 0 OK\n"
    "\n"
    '{"taskId": "t1", "id": "c1", "url": "http://127.0.0.1:9/hook", "token": "{{TOKEN}}"}\n'
    "\n"
)


def test_check_passes_a_delivery_of_a_config_registered_over_grpc(tmp_path: Path) -> None:
    path = tmp_path / "grpc.http"
    path.write_text(GRPC_CREATE + DELIVERY)
    assert loads(path.read_text()).exchanges[1].push_config == 1
    assert check_paths([path]) == (1, [])


CONFIG = {"url": "http://127.0.0.1:9/hook", "token": "s"}


@pytest.mark.parametrize(
    ("method", "target", "body", "registers"),
    [
        (
            "POST",
            "/a2a/jsonrpc",
            {
                "jsonrpc": "2.0",
                "method": "SendMessage",
                "params": {"message": {}, "configuration": {"taskPushNotificationConfig": CONFIG}},
            },
            True,
        ),
        (
            "POST",
            "/a2a/jsonrpc",
            {"jsonrpc": "2.0", "method": "CreateTaskPushNotificationConfig", "params": CONFIG},
            True,
        ),
        (
            "POST",
            "/a2a/jsonrpc",
            {
                "jsonrpc": "2.0",
                "method": "tasks/pushNotificationConfig/set",
                "params": {"taskId": "t", "pushNotificationConfig": CONFIG},
            },
            True,
        ),
        (
            "POST",
            "/a2a/jsonrpc",
            {"jsonrpc": "2.0", "method": "GetTaskPushNotificationConfig", "params": CONFIG},
            False,
        ),
        ("POST", "/tasks/t1/pushNotificationConfigs", CONFIG, True),
        (
            "POST",
            "/message:send",
            {"message": {}, "configuration": {"taskPushNotificationConfig": CONFIG}},
            True,
        ),
        ("POST", "/message:send", {"message": {}}, False),
        ("GET", "/tasks/t1/pushNotificationConfigs", CONFIG, False),
        # gRPC: the call's path, its message's ProtoJSON
        (
            "GRPC",
            "/lf.a2a.v1.A2AService/SendMessage",
            {"message": {}, "configuration": {"taskPushNotificationConfig": CONFIG}},
            True,
        ),
        (
            "GRPC",
            "/lf.a2a.v1.A2AService/SendStreamingMessage",
            {"message": {}, "configuration": {"taskPushNotificationConfig": CONFIG}},
            True,
        ),
        ("GRPC", "/lf.a2a.v1.A2AService/SendMessage", {"message": {}}, False),
        (
            "GRPC",
            "/lf.a2a.v1.A2AService/CreateTaskPushNotificationConfig",
            {"taskId": "t1", **CONFIG},
            True,
        ),
        ("GRPC", "/lf.a2a.v1.A2AService/GetTaskPushNotificationConfig", CONFIG, False),
        ("GRPC", "/other.Service/CreateTaskPushNotificationConfig", CONFIG, False),
    ],
)
def test_which_requests_register_a_push_config(
    method: str, target: str, body: object, registers: bool
) -> None:
    assert registers_push_config(_request(method, target, body)) is registers
    found = config_objects(method, target, body)
    assert [c["url"] for c in found] == ([CONFIG["url"]] if registers else [])


def test_check_fails_a_forged_tag_on_an_exchange_that_is_no_delivery(tmp_path: Path) -> None:
    text = "# recorder-format: 1\n\n" + CREATE.replace(
        "### register a webhook\n", "### x\n# @forged\n"
    )
    text += DELIVERY.replace("# @push config 1\n", "# @push config 1\n# @forged\n")
    path = tmp_path / "01-forged.http"
    path.write_text(text)
    transcript = loads(text)
    assert [e.comments for e in transcript.exchanges] == [("@forged",), ("@forged",)]
    _, problems = check_paths([path])
    assert [(p.line, p.message) for p in problems] == [
        (3, "@forged: only a push delivery (# @push config N) is forged")
    ]
