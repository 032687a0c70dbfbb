"""Secrets become placeholders before anything is written."""

from __future__ import annotations

import base64
import json

import pytest

from recorder import Headers
from recorder.format.sse import SseEvent
from recorder.secrets.redact import Redactor, placeholder_name, scrub_text, secret_names


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("Authorization", "Bearer abc.def.ghi", "Bearer {{A2A_TOKEN}}"),
        ("authorization", "Basic dXNlcjpwYXNz", "Basic {{A2A_TOKEN}}"),
        ("Authorization", "opaque-token", "{{A2A_TOKEN}}"),
        ("Proxy-Authorization", "Bearer x1", "Bearer {{PROXY_AUTHORIZATION}}"),
        ("Cookie", "sid=abc; theme=dark", "{{COOKIE}}"),
        ("Set-Cookie", "sid=abc; Path=/; HttpOnly", "sid={{SET_COOKIE}}; Path=/; HttpOnly"),
        ("X-API-Key", "k-123", "{{X_API_KEY}}"),
        ("Content-Type", "application/json", "application/json"),
    ],
)
def test_secret_headers_become_placeholders(name: str, value: str, expected: str) -> None:
    redactor = Redactor()
    assert redactor.redact_headers(Headers([(name, value)])) == Headers([(name, expected)])


def test_seen_secrets_are_remembered_for_scrubbing() -> None:
    redactor = Redactor()
    redactor.redact_headers(Headers([("Authorization", "Bearer s3cr3t-token")]))
    assert redactor.seen == {"s3cr3t-token": "A2A_TOKEN"}
    text = '{"message": "token s3cr3t-token is wrong"}'
    assert scrub_text(text, redactor.seen) == '{"message": "token {{A2A_TOKEN}} is wrong"}'


def test_scrub_skips_values_too_short_to_be_secrets() -> None:
    assert scrub_text("a b c", {"b": "X"}) == "a b c"


def test_rules_names_extend_the_headers() -> None:
    redactor = Redactor(headers=["X-Session"], fields={"token": "PUSH_TOKEN"})
    headers = redactor.redact_headers(Headers([("x-session", "abc"), ("Authorization", "B x")]))
    assert headers.get("x-session") == "{{X_SESSION}}"
    assert headers.get("Authorization") == "B x"  # only the names given are secret


def test_secret_json_fields_at_any_depth() -> None:
    redactor = Redactor(fields={"token": "PUSH_TOKEN", "credentials": "PUSH_CREDENTIALS"})
    body = {
        "params": {
            "url": "http://127.0.0.1:9/hook",
            "token": "tok-abcdef",
            "authentication": {"scheme": "Bearer", "credentials": "cred-123456"},
            "list": [{"token": 42}, {"token": None}],
        }
    }
    out = json.loads(redactor.redact_body(json.dumps(body).encode(), "application/json"))
    assert out["params"]["token"] == "{{PUSH_TOKEN}}"
    assert out["params"]["authentication"] == {
        "scheme": "Bearer",
        "credentials": "{{PUSH_CREDENTIALS}}",
    }
    assert out["params"]["list"] == [{"token": "{{PUSH_TOKEN}}"}, {"token": None}]
    assert out["params"]["url"] == "http://127.0.0.1:9/hook"
    assert redactor.seen["tok-abcdef"] == "PUSH_TOKEN"


def test_non_json_bodies_are_left_to_scrubbing() -> None:
    redactor = Redactor(fields=["token"])
    assert redactor.redact_body(b"token=abc", "text/plain") == b"token=abc"
    assert redactor.redact_body(b"{not json", "application/json") == b"{not json"


def test_secret_fields_in_sse_frames() -> None:
    redactor = Redactor(fields=["token"])
    events = (SseEvent(data='{"token": "abcdefgh"}'), SseEvent(data="plain"))
    out = redactor.redact_events(events)
    assert out[0].data == '{"token": "{{TOKEN}}"}'
    assert out[1] == events[1]


def test_secret_query_parameters() -> None:
    redactor = Redactor(fields=["api_key"])
    assert redactor.redact_target("/x?a=1&api_key=zzz") == "/x?a=1&api_key={{API_KEY}}"
    assert redactor.redact_target("/x?a=1") == "/x?a=1"


def test_names() -> None:
    assert placeholder_name("x-api-key") == "X_API_KEY"
    assert placeholder_name("1password") == "_1PASSWORD"
    assert secret_names(["Authorization"], fold=True) == {"authorization": "AUTHORIZATION"}


def test_fresh_redactor_keeps_the_names_and_forgets_what_was_seen() -> None:
    first = Redactor(headers=["X-Session"], fields={"token": "PUSH_TOKEN"})
    first.redact_headers(Headers([("x-session", "s-123456")]))
    second = first.fresh()
    assert second.seen == {} and first.seen == {"s-123456": "X_SESSION"}
    assert second.redact_headers(Headers([("X-Session", "other-9876")])) == Headers(
        [("X-Session", "{{X_SESSION}}")]
    )
    assert second.seen == {"other-9876": "X_SESSION"} and "other-9876" not in first.seen


def test_secret_query_parameter_changes_only_its_value() -> None:
    redactor = Redactor(fields=["api_key"])
    target = "/x?a=%2b+&api_key=s3cr%2Fet&b=&c&d=%7E"
    assert redactor.redact_target(target) == "/x?a=%2b+&api_key={{API_KEY}}&b=&c&d=%7E"
    # decoded and as sent: an agent echoing either spelling is scrubbed
    assert redactor.seen == {"s3cr/et": "API_KEY", "s3cr%2Fet": "API_KEY"}


def test_each_cookie_value_is_a_secret_for_scrubbing() -> None:
    redactor = Redactor()
    out = redactor.redact_headers(Headers([("Cookie", "theme=dark; sid=SECRETVALUE1")]))
    assert out == Headers([("Cookie", "{{COOKIE}}")])
    echoed = '{"error": "unknown session SECRETVALUE1"}'
    assert scrub_text(echoed, redactor.seen) == '{"error": "unknown session {{COOKIE}}"}'


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/octet-stream"])
def test_a_json_body_under_another_media_type_is_redacted_too(content_type: str | None) -> None:
    redactor = Redactor(fields=["credentials"])
    body = b' \n{"credentials": "cr-Wq2Lp7", "n": 1}'
    assert json.loads(redactor.redact_body(body, content_type)) == {
        "credentials": "{{CREDENTIALS}}",
        "n": 1,
    }
    assert redactor.redact_body(b"[1, 2]", content_type) == b"[1, 2]"  # no secret: as it came


def test_a_body_with_a_lone_surrogate_is_still_redacted() -> None:
    # "\ud800" is JSON text that names no character: the redacted body writes it escaped
    redactor = Redactor(fields={"token": "PUSH_TOKEN"})
    body = b'{"token": "tok-abcdef", "note": "a\\ud800b"}'
    out = redactor.redact_body(body, "application/json")
    assert json.loads(out) == {"token": "{{PUSH_TOKEN}}", "note": "a\ud800b"}
    assert b"tok-abcdef" not in out


def test_a_scheme_without_credentials_is_no_secret() -> None:
    # a client whose token variable is unset sends `Bearer`: scrubbing the word from every
    # file would break them all
    redactor = Redactor()
    out = redactor.redact_headers(Headers([("Authorization", "Bearer")]))
    assert out == Headers([("Authorization", "Bearer")])
    assert redactor.seen == {}


def test_a_cookie_value_that_reads_like_a_word_is_not_scrubbed_from_text() -> None:
    redactor = Redactor()
    redactor.redact_headers(Headers([("Cookie", "theme=review; lang=english; sid=Zx81kq02")]))
    assert "Zx81kq02" in redactor.seen
    assert "review" not in redactor.seen and "english" not in redactor.seen
    assert scrub_text("please review in english", redactor.seen) == "please review in english"


def test_a_secret_is_scrubbed_as_json_escapes_it_too() -> None:
    secret = 'pa"ss\\word-1\n2'
    text = json.dumps({"echo": f"you sent {secret}"})
    assert json.loads(scrub_text(text, {secret: "PASSWORD"})) == {"echo": "you sent {{PASSWORD}}"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"params": {"apiKey": "malformed-secret-1",}}',  # a trailing comma: no JSON
        b'{"apiKey": "latin-secret-55", "x": "caf\xe9"}',  # a byte that is no UTF-8
    ],
)
def test_a_secret_member_of_json_that_does_not_parse_is_redacted_in_the_text(
    body: bytes,
) -> None:
    redactor = Redactor(fields={"apiKey": "APIKEY"})
    out = redactor.redact_body(body, "application/json")
    assert b"secret" not in out and b'"apiKey": "{{APIKEY}}"' in out
    assert (
        body.replace(b"malformed-secret-1", b"{{APIKEY}}").replace(
            b"latin-secret-55", b"{{APIKEY}}"
        )
        == out
    )  # every other byte kept


def test_a_secret_echoed_in_a_body_that_is_no_text_is_scrubbed_in_its_bytes() -> None:
    redactor = Redactor()
    redactor.redact_headers(Headers([("Authorization", "Bearer tokSECRET0002")]))
    body = b"\xff\xfe token tokSECRET0002 here"
    assert redactor.redact_body(body, "text/plain") == b"\xff\xfe token {{A2A_TOKEN}} here"


def test_a_secret_parameter_of_a_form_body_is_redacted() -> None:
    redactor = Redactor(fields={"password": "PASSWORD"})
    body = b"user=ann&password=s%3Dcret-123&keep=%2B1"
    out = redactor.redact_body(body, "application/x-www-form-urlencoded; charset=utf-8")
    assert out == b"user=ann&password={{PASSWORD}}&keep=%2B1"
    assert redactor.seen == {"s=cret-123": "PASSWORD", "s%3Dcret-123": "PASSWORD"}
    # text: no form, but a secret parameter of a URL or query in it is one all the same
    text = b"see https://h/cb?password=s3cret-123 and password=kept-as-prose"
    assert redactor.redact_body(text, "text/plain") == (
        b"see https://h/cb?password={{PASSWORD}} and password=kept-as-prose"
    )


def test_default_fields_are_the_a2a_places_and_the_usual_names_in_any_case() -> None:
    redactor = Redactor()
    body = {
        "params": {
            "token": "push-tok",
            "authentication": {"scheme": "Bearer", "credentials": "cred"},
            "Password": "pw",
            "API_KEY": "ak",
            "nextPageToken": "not-a-secret",
        }
    }
    out = json.loads(redactor.redact_body(json.dumps(body).encode(), "application/json"))
    assert out["params"] == {
        "token": "{{TOKEN}}",
        "authentication": {"scheme": "Bearer", "credentials": "{{CREDENTIALS}}"},
        "Password": "{{PASSWORD}}",
        "API_KEY": "{{API_KEY}}",
        "nextPageToken": "not-a-secret",
    }
    assert (
        redactor.redact_target("/t?Access_Token=a%2Bb&page=2")
        == "/t?Access_Token={{ACCESS_TOKEN}}&page=2"
    )
    form = redactor.redact_body(
        b"user=ada&client_secret=cs&x=1", "application/x-www-form-urlencoded"
    )
    assert form == b"user=ada&client_secret={{CLIENT_SECRET}}&x=1"


def test_a_short_secret_is_scrubbed_where_it_is_a_whole_value_only() -> None:
    secrets = {"k9Zq2": "TOKEN"}
    text = (
        "GET /t?echo=k9Zq2&other=k9Zq2x HTTP/1.1\r\n"
        "X-Echo: k9Zq2\r\n"
        "X-Other: k9Zq2 and more\r\n\r\n"
        '{"a": "k9Zq2", "b": "the k9Zq2 token", "c": ["k9Zq2"]}\n'
        "password=k9Zq2&q=1\n"
    )
    assert scrub_text(text, secrets) == (
        "GET /t?echo={{TOKEN}}&other=k9Zq2x HTTP/1.1\r\n"
        "X-Echo: {{TOKEN}}\r\n"
        "X-Other: k9Zq2 and more\r\n\r\n"
        '{"a": "{{TOKEN}}", "b": "the k9Zq2 token", "c": ["{{TOKEN}}"]}\n'
        "password={{TOKEN}}&q=1\n"
    )
    # a value that is the secret itself (a header value, a string a mismatch shows)
    assert scrub_text("k9Zq2", secrets) == "{{TOKEN}}"
    # JSON-escaped and percent-encoded spellings
    assert scrub_text('{"a": "q\\"1"}', {'q"1': "PW"}) == '{"a": "{{PW}}"}'
    assert scrub_text("/t?x=a%20b", {"a b": "PW"}) == "/t?x={{PW}}"


def test_a_secret_number_or_boolean_is_scrubbed_elsewhere_only_when_long() -> None:
    redactor = Redactor(fields=["pin", "secret"])
    redactor.redact_json_value({"pin": 1234, "secret": True, "other": {"pin": 12345678}})
    assert redactor.seen == {"12345678": "PIN"}


# ----------------------------------------------------------- issue 34, item 8: four places


def test_the_bin_twin_of_a_secret_header_gets_a_placeholder_of_its_own() -> None:
    # gRPC's binary metadata: `authorization-bin` is the base64 of what `authorization` holds
    value = base64.b64encode(b"Bearer bin-s3cret-777").decode()
    redactor = Redactor()
    headers = redactor.redact_headers(
        Headers(
            [("authorization-bin", value), ("x-api-key-bin", "eGtleS05OTk="), ("x-n-bin", "AA==")]
        )
    )
    assert list(headers) == [
        ("authorization-bin", "{{AUTHORIZATION_BIN}}"),
        ("x-api-key-bin", "{{X_API_KEY_BIN}}"),
        ("x-n-bin", "AA=="),  # not a secret header's twin
    ]
    # its value, and its text decoded (what an agent may echo), are scrubbed elsewhere
    assert redactor.seen[value] == "AUTHORIZATION_BIN"
    assert redactor.seen["Bearer bin-s3cret-777"] == "AUTHORIZATION_BIN"


def test_a_password_inside_a_parts_base64_bytes_is_redacted_in_them() -> None:
    inner = json.dumps({"user": "ann", "password": "raw-s3cret-42"}).encode()
    form = b"grant=x&client_secret=raw-form-s3cret"
    message = {
        "parts": [
            {"raw": base64.b64encode(inner).decode(), "mediaType": "application/json"},
            {"file": {"bytes": base64.b64encode(form).decode(), "mimeType": "text/plain"}},
            {"raw": "bm90IGEgc2VjcmV0", "mediaType": "text/plain"},  # "not a secret"
        ]
    }
    redactor = Redactor()
    out = redactor.redact_json_value(message)
    first = json.loads(base64.b64decode(out["parts"][0]["raw"]))
    assert first == {"user": "ann", "password": "{{PASSWORD}}"}
    second = base64.b64decode(out["parts"][1]["file"]["bytes"])
    assert second == b"grant=x&client_secret={{CLIENT_SECRET}}"
    assert out["parts"][2] == message["parts"][2]  # left as it was, byte for byte
    assert {"raw-s3cret-42", "raw-form-s3cret"} <= set(redactor.seen)


def test_a_secret_parameter_of_a_url_inside_free_text_is_redacted() -> None:
    text = "Done? Call https://hooks.example/cb?id=7&token=text-s3cret-9 back, or ?api_key=k3y-55."
    redactor = Redactor()
    out = redactor.redact_json_value({"parts": [{"text": text}]})
    assert out["parts"][0]["text"] == (
        "Done? Call https://hooks.example/cb?id=7&token={{TOKEN}} back, or ?api_key={{API_KEY}}."
    )
    assert {"text-s3cret-9", "k3y-55"} <= set(redactor.seen)


def test_the_credentials_of_a_url_are_redacted_in_a_push_config_and_in_text() -> None:
    config = {"taskId": "t-1", "url": "https://hook:pa55-w0rd@hooks.example/in", "token": "tk"}
    redactor = Redactor()
    out = redactor.redact_json_value({"params": config})
    assert out["params"]["url"] == "https://{{URL_CREDENTIALS}}@hooks.example/in"
    said = redactor.redact_json_value({"text": "pushed to https://hook:pa55-w0rd@hooks.example"})
    assert said == {"text": "pushed to https://{{URL_CREDENTIALS}}@hooks.example"}
    # what the webhook's Basic auth would carry is scrubbed wherever an agent echoes it
    basic = base64.b64encode(b"hook:pa55-w0rd").decode()
    assert redactor.seen[basic] == "URL_CREDENTIALS"
    assert redactor.seen["pa55-w0rd"] == "URL_CREDENTIALS"
