"""HAR 1.2 read and written (`recorder.format.har`): what a producer's file holds is read into
values, and anything that is not a HAR is an error at its JSON path (or line and column)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from recorder.errors import HarError
from recorder.format import har


def entry(**overrides: Any) -> dict[str, Any]:
    """A HAR entry as producers write one (mitmproxy's shape), with `overrides`."""
    value: dict[str, Any] = {
        "startedDateTime": "2026-12-04T23:30:57.270818+00:00",
        "time": 34.75,
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:41242/a2a/jsonrpc?x=1",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "queryString": [{"name": "x", "value": "1"}],
            "postData": {"mimeType": "application/json", "text": '{"a": 1}'},
            "headersSize": -1,
            "bodySize": 8,
        },
        "response": {
            "status": 200,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": "content-type", "value": "application/json"}],
            "content": {"size": 2, "mimeType": "application/json", "text": "{}"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": 2,
        },
        "cache": {},
        "timings": {"connect": 7.9, "ssl": -1, "send": 1.5, "wait": 20.0, "receive": 5.0},
    }
    value.update(overrides)
    return value


def document(*entries: dict[str, Any], **log: Any) -> str:
    return json.dumps({"log": {"version": "1.2", "entries": list(entries), **log}})


def test_an_entry_is_read_as_its_producer_wrote_it() -> None:
    log = har.loads(document(entry(), creator={"name": "mitmproxy", "version": "11.0.2"}))
    assert (log.creator, log.creator_version) == ("mitmproxy", "11.0.2")
    (read,) = log.entries
    assert read.request.method == "POST"
    assert read.request.url == "http://127.0.0.1:41242/a2a/jsonrpc?x=1"
    assert read.request.headers == (("Content-Type", "application/json"),)
    assert read.request.body == b'{"a": 1}'
    assert (read.response.status, read.response.body) == (200, b"{}")
    assert read.started == datetime.datetime(2026, 12, 4, 23, 30, 57, 270818, tzinfo=datetime.UTC)
    # the timings not known (-1) are left out; the reply's head came after those before it
    assert "ssl" not in read.timings
    assert read.head_at == read.started + datetime.timedelta(milliseconds=7.9 + 1.5 + 20.0)
    assert read.ended_at == read.started + datetime.timedelta(milliseconds=34.75)
    assert read.where == "$.log.entries[0]"


def test_base64_bodies_are_decoded_on_either_side() -> None:
    binary = bytes(range(256))
    import base64

    text = base64.b64encode(binary).decode()
    value = entry()
    value["request"]["postData"] = {
        "mimeType": "application/grpc",
        "text": text,
        "encoding": "base64",
    }
    value["response"]["content"] = {
        "size": 256,
        "mimeType": "x",
        "text": text,
        "encoding": "base64",
    }
    (read,) = har.loads(document(value)).entries
    assert read.request.body == binary
    assert read.response.body == binary


def test_a_body_the_producer_did_not_keep_is_none_and_an_empty_one_is_empty() -> None:
    kept_none = entry()
    kept_none["response"]["content"] = {"size": 203, "mimeType": "application/json"}
    empty = entry()
    empty["response"]["content"] = {"size": 0, "mimeType": ""}
    first, second = har.loads(document(kept_none, empty)).entries
    assert first.response.body is None
    assert second.response.body == b""


def test_form_params_without_text_are_the_urlencoded_body() -> None:
    value = entry()
    value["request"]["postData"] = {
        "mimeType": "application/x-www-form-urlencoded",
        "params": [{"name": "a b", "value": "1&2"}, {"name": "c", "value": ""}],
    }
    (read,) = har.loads(document(value)).entries
    assert read.request.body == b"a+b=1%262&c="


HOSTILE = [
    # (name, text, where, words of the message)
    ("not JSON", '{"log": {"entries": [}', "1:22", "not JSON"),
    ("not an object", "[]", "$", "expected an object, got an array"),
    ("no log", "{}", "$", 'no "log" member'),
    ("no entries", '{"log": {}}', "$.log", 'no "entries" member'),
    ("entries not an array", '{"log": {"entries": {}}}', "$.log.entries", "expected an array"),
    (
        "a url that is a number",
        document(entry(request={**entry()["request"], "url": 7})),
        "$.log.entries[0].request.url",
        "expected a string, got a number",
    ),
    (
        "a header without a value",
        document(entry(request={**entry()["request"], "headers": [{"name": "a"}]})),
        "$.log.entries[0].request.headers[0]",
        'no "value" member',
    ),
    (
        "a status that is text",
        document(entry(response={**entry()["response"], "status": "200"})),
        "$.log.entries[0].response.status",
        "expected a number, got a string",
    ),
    (
        "a status that is no integer",
        document(entry(response={**entry()["response"], "status": 200.5})),
        "$.log.entries[0].response.status",
        "not a status code",
    ),
    (
        "a date that is none",
        document(entry(startedDateTime="yesterday")),
        "$.log.entries[0].startedDateTime",
        "not an ISO 8601 date",
    ),
    (
        "base64 that is none",
        document(
            entry(
                response={
                    **entry()["response"],
                    "content": {"size": 1, "text": "!!!", "encoding": "base64"},
                }
            )
        ),
        "$.log.entries[0].response.content.text",
        "not base64",
    ),
    (
        "an unknown encoding",
        document(
            entry(
                response={
                    **entry()["response"],
                    "content": {"size": 1, "text": "x", "encoding": "gzip"},
                }
            )
        ),
        "$.log.entries[0].response.content.encoding",
        "unknown encoding",
    ),
    (
        "a timing that is text",
        document(entry(timings={"wait": "1"})),
        "$.log.entries[0].timings.wait",
        "expected a number",
    ),
    (
        "_recorder that is no object",
        document(entry(_recorder=[1])),
        "$.log.entries[0]._recorder",
        "expected an object",
    ),
    ("too deep", "[" * 100_000 + "]" * 100_000, "$", "not JSON"),
]


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [case[1:] for case in HOSTILE],
    ids=[case[0] for case in HOSTILE],
)
def test_what_is_no_har_is_an_error_at_its_json_path(text: str, where: str, words: str) -> None:
    with pytest.raises(HarError) as caught:
        har.loads(text, source="capture.har")
    assert caught.value.where == where
    assert str(caught.value).startswith(f"capture.har: {where}: ")
    assert words in str(caught.value)


def test_what_is_written_reads_back() -> None:
    log = har.HarLog(
        entries=(
            har.HarEntry(
                request=har.HarRequest(
                    method="POST",
                    url="http://h/a?b=c",
                    headers=(("Host", "h"),),
                    body=b"\xff\x00",
                    mime_type="application/grpc",
                ),
                response=har.HarResponse(
                    status=200,
                    status_text="OK",
                    headers=(("content-type", "text/plain"),),
                    body="héllo".encode(),
                    mime_type="text/plain",
                    trailers=(("grpc-status", "0"),),
                ),
                started=datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC),
                page="p",
                recorder={"title": "t"},
            ),
        ),
        pages=(har.HarPage(id="p", title="p", recorder={"file": "p"}),),
        creator="recorder",
        creator_version="1",
    )
    text = har.dumps(log)
    value = json.loads(text)
    written = value["log"]["entries"][0]
    assert written["startedDateTime"] == "2026-01-02T03:04:05.006Z"
    assert written["request"]["postData"]["encoding"] == "base64"
    assert written["request"]["queryString"] == [{"name": "b", "value": "c"}]
    assert written["response"]["content"]["text"] == "héllo"
    assert set(written["timings"]) >= {"send", "wait", "receive"}
    again = har.loads(text)
    assert again.entries[0].request == log.entries[0].request
    assert again.entries[0].response == log.entries[0].response
    assert again.entries[0].recorder == {"title": "t"}
    assert again.pages[0].recorder == {"file": "p"}
    assert (again.creator, again.creator_version) == ("recorder", "1")
