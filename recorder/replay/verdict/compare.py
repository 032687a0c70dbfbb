"""Comparison: a recorded reply against a live one, part by part (rules 7 and 8).

Status, headers, then the body: the fast path (`recorder.replay.verdict.fastpath`) decides the
common case, the walk (`recorder.replay.verdict.walk`) the rest; strings outside JSON (headers, text
bodies, SSE ids) compare as `recorder.replay.verdict.strings.Strings` says.

7. SSE replies compare frame by frame: count, order, `event:` names, each frame's data (JSON or
   text). Frames that hold only comments (keep-alive pings) are not frames of the reply. A
   `truncated` recording compares only the frames it holds (a truncated single body: status
   and headers only; a truncated gRPC call: its initial metadata and the messages it holds,
   its status and trailers being its client's leaving).
A place a rules file's `checks` name (`recorder.replay.verdict.checked`) is decided by its checks,
not by equality: an exchange with checks goes past the fast path, to the walk, each body or frame's
checked places taken out first.

An exchange the rules' `assembled` names compares as the client assembles its replies
(`recorder.rules.assembly`): a body's text parts joined (each message's, each artifact's), an
event stream's frames as one value (the task with its artifacts put together from their chunks, the
sequence of states), so that an answer cut otherwise (two text parts for one, four chunks for
two) is the same answer; its mismatches name places of that value, with no frame. (A truncated
recording holds a stream's first frames only: compared frame by frame still.)

8. The status code and the Content-Type (media type) are always compared; other headers unless
   `rules.ignored_headers` or `rules.secret_headers` name them. A member that
   `rules.secret_fields` names is compared for presence only: the recording holds a placeholder
   (`{{API_KEY}}`) where the agent sends the secret (the walk does that part).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from recorder.bindings import grpc
from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.format.model import (
    Exchange,
    Headers,
    Response,
    SseEvent,
    is_event_stream,
    is_json_media_type,
    media_type,
)
from recorder.replay.verdict.checked import ExchangeChecks, FileChecks
from recorder.replay.verdict.diff import ABSENT, Mismatch, align
from recorder.replay.verdict.fastpath import FastPath
from recorder.replay.verdict.live import (
    EMPTY,
    LiveReply,
    body_value,
    real_frames,
)
from recorder.replay.verdict.strings import Strings
from recorder.replay.verdict.walk import Walk
from recorder.rules.assembly import assemble, joined_parts
from recorder.rules.pairing import AliasMap
from recorder.rules.ruleset import Rules

__all__ = ["Comparison"]


class Comparison:
    """Compares the replies of one transcript, in order, with the rooms it is given."""

    def __init__(
        self,
        rules: Rules,
        aliases: AliasMap,
        strings: Strings,
        fast: FastPath,
        walk: Walk,
        checks: FileChecks | None = None,
        file: str = "",
    ) -> None:
        self._compare_content_type_params = rules.compare_content_type_params
        self._skip_headers = (
            rules.ignored_headers | frozenset(rules.secret_headers) | {"content-type"}
        )
        self._golden_to_live = aliases.golden_to_live
        self._compare_text = strings.compare
        self._wildcard_text = strings.wildcard
        self._fast = fast
        self._walk = walk
        self._checks = checks if checks else None
        self._file = file
        self._rules_assemble = rules.assembles if rules.assembled else None
        self._assembled = False
        """Whether the exchange being compared compares assembled (the rules' `assembled`)."""
        self._now: ExchangeChecks | None = None
        """The checks of the exchange being compared (None: none applies)."""
        self._quiet = False
        """Pairs learned without a verdict: checked places taken out, their checks not run."""

    def compare(
        self, golden: Exchange, live: Response | LiveReply, number: int | None = None
    ) -> list[Mismatch]:
        """Normalize and compare the recorded reply with the live one, learn pairs. [] = match.

        `live` is a `Response`, or a `LiveReply` as it arrived (cheaper: see `LiveReply`). The
        client values of `golden.request` must be learned first (`CarryForward`). `number` is
        the exchange's (1-based), for the checks scoped to it.
        """
        self._now = None if self._checks is None else self._checks.for_exchange(golden, number)
        self._assembled = self._rules_assemble is not None and self._rules_assemble(
            self._file, number
        )
        return self._compare(golden, live)

    @property
    def checked(self) -> ExchangeChecks | None:
        """The checks of the exchange compared last (None: none applied)."""
        return self._now

    def _compare(self, golden: Exchange, live: Response | LiveReply) -> list[Mismatch]:
        expected = golden.response
        out: list[Mismatch] = []
        # a truncated gRPC call's status and trailers are how its client left (CANCELLED, its
        # deadline), not the agent's: the agent sends them at the end, which the client never
        # read, and which a replay cut where the recording ends never reads either
        cut_call = golden.truncated and expected.is_grpc
        if expected.status != live.status and not cut_call:
            out.append(Mismatch("status", expected.status, live.status))
        self._compare_headers(expected.headers, live.headers, out)
        live_trailers = live.trailers
        if (expected.trailers or live_trailers) and not cut_call:
            # a gRPC call's trailing metadata, compared as headers are ("trailer NAME")
            if expected.is_grpc and expected.status != 0:
                self._compare_status_trailers(expected.trailers, live_trailers, out)
            else:
                self._compare_headers(expected.trailers, live_trailers, out, what="trailer")
        if isinstance(live, LiveReply):
            if (
                golden.truncated
                and not expected.is_stream
                and not is_event_stream(live.content_type)
            ):
                pass  # a truncated single body: status and headers only (rule 7)
            elif (
                not golden.truncated
                and not expected.is_stream
                and expected.is_json
                and is_json_media_type(live.content_type)
            ):
                if (
                    self._now is not None
                    or self._assembled
                    or not self._fast.matches_wire(expected, live.body)
                ):
                    # the fast path on the pretty texts would say the same: straight to the walk
                    self._compare_bodies(expected, live.response, out, fast=False)
            else:
                self._compare_replies(expected, live.response, golden.truncated, out)
        else:
            self._compare_replies(expected, live, golden.truncated, out)
        return out

    def _compare_replies(
        self, expected: Response, live: Response, truncated: bool, out: list[Mismatch]
    ) -> None:
        if expected.is_stream or live.is_stream:
            self._compare_streams(expected, live, truncated, out)
        elif not truncated:
            self._compare_bodies(expected, live, out)

    def _compare_headers(
        self,
        expected: Headers,
        actual: Iterable[tuple[str, str]],
        out: list[Mismatch],
        *,
        what: str = "header",
    ) -> None:
        expected_fields = _fields_by_name(expected)
        actual_fields = _fields_by_name(actual)
        expected_type = expected_fields.get("content-type", [None])[0]
        actual_type = actual_fields.get("content-type", [None])[0]
        if self._compare_content_type_params:
            same = _normal_content_type(expected_type) == _normal_content_type(actual_type)
        else:
            same = media_type(expected_type) == media_type(actual_type)
        if not same:
            out.append(
                Mismatch(
                    f"{what} content-type",
                    ABSENT if expected_type is None else expected_type,
                    ABSENT if actual_type is None else actual_type,
                )
            )
        skip = self._skip_headers
        for name in dict.fromkeys([*expected_fields, *actual_fields]):
            if name in skip:
                continue
            expected_values = expected_fields.get(name)
            actual_values = actual_fields.get(name)
            if not expected_values or not actual_values:
                out.append(
                    Mismatch(
                        f"{what} {name}",
                        ", ".join(expected_values) if expected_values else ABSENT,
                        ", ".join(actual_values) if actual_values else ABSENT,
                    )
                )
                continue
            normal_expected = ", ".join(expected_values)
            normal_actual = ", ".join(actual_values)
            if normal_expected == normal_actual and not self._golden_to_live:
                continue
            problem = self._compare_text(normal_expected, normal_actual)
            if problem is not None:
                out.append(Mismatch(f"{what} {name}", problem[0], problem[1], message=problem[2]))

    def _compare_status_trailers(
        self, expected: Headers, actual: Iterable[tuple[str, str]], out: list[Mismatch]
    ) -> None:
        """A gRPC stream that failed after its messages keeps its google.rpc.Status in its
        trailers (`grpc-status-details` whole, `grpc-message` its text): compared as a failed
        call's body is (its free text left out unless the rules compare it); the other
        trailers as headers."""
        actual = list(actual)
        others = (_other_trailers(expected), _other_trailers(actual))
        self._compare_headers(*others, out, what="trailer")
        found: list[Mismatch] = []
        self._walk.compare_json(_status_of(expected), _status_of(actual), None, found, status=True)
        if any(name.lower() == grpc.STATUS_DETAILS for name, _ in [*expected, *actual]):
            where = f"trailer {grpc.STATUS_DETAILS} "
            out.extend(dataclasses.replace(one, path=where + one.path) for one in found)
        else:  # (the message alone: `$.message`)
            out.extend(
                dataclasses.replace(one, path=f"trailer {grpc.GRPC_MESSAGE}") for one in found
            )

    def _compare_bodies(
        self, expected: Response, actual: Response, out: list[Mismatch], *, fast: bool = True
    ) -> None:
        if (
            fast
            and self._now is None
            and not self._assembled
            and expected.is_json
            and actual.is_json
            and self._fast.matches(expected.body, actual.body)
        ):
            return
        expected_value = body_value(expected)
        actual_value = body_value(actual)
        if expected_value is EMPTY and actual_value is EMPTY:
            return
        if (
            expected_value is not NOT_JSON
            and expected_value is not EMPTY
            and actual_value is not NOT_JSON
            and actual_value is not EMPTY
        ):
            if self._assembled:
                expected_value, actual_value = (
                    joined_parts(expected_value),
                    joined_parts(actual_value),
                )
            # a failed gRPC call's body is its google.rpc.Status: its free text is the error's
            failed_call = expected.is_grpc and expected.status != 0
            self._compare_json(expected_value, actual_value, None, out, status=failed_call)
            return
        if expected_value is NOT_JSON and actual_value is NOT_JSON:
            self._compare_raw(expected.body, actual.body, "body", None, out)
            return
        message = f"expected {_body_kind(expected_value)}, got {_body_kind(actual_value)}"
        if expected_value is NOT_JSON and expected.is_json:
            last = expected.body.rstrip().rpartition(b"\n")[2]
            message += "; the recorded body says JSON but is not JSON" + (
                " (its last line starts with #: a comment line before the next ### belongs"
                " to the body above it)"
                if last.startswith(b"#")
                else ""
            )
        out.append(
            Mismatch(
                "body",
                _describe_body(expected_value, expected.body),
                _describe_body(actual_value, actual.body),
                message=message,
            )
        )

    def _compare_raw(
        self, expected: bytes, actual: bytes, path: str, frame: int | None, out: list[Mismatch]
    ) -> None:
        try:
            expected_text = expected.decode("utf-8")
            actual_text = actual.decode("utf-8")
        except UnicodeDecodeError:
            if expected != actual:
                out.append(
                    Mismatch(
                        path,
                        f"{len(expected)} bytes",
                        f"{len(actual)} bytes",
                        frame,
                        "bytes differ",
                    )
                )
            return
        problem = self._compare_text(expected_text, actual_text)
        if problem is not None:
            out.append(Mismatch(path, problem[0], problem[1], frame, problem[2]))

    def _compare_streams(
        self, expected: Response, actual: Response, truncated: bool, out: list[Mismatch]
    ) -> None:
        if expected.events is None or actual.events is None:
            out.append(
                Mismatch(
                    "body",
                    "an SSE stream" if expected.events is not None else _short(expected.text),
                    "an SSE stream" if actual.events is not None else _short(actual.text),
                    message=(
                        "expected an SSE stream (text/event-stream), got a single body"
                        if expected.events is not None and not is_event_stream(actual.content_type)
                        else "the live event stream is not well-formed SSE (kept as raw bytes)"
                        if expected.events is not None
                        else "expected a single body, got an SSE stream"
                    ),
                )
            )
            return
        golden_frames = real_frames(expected.events)
        live_frames = real_frames(actual.events)
        if self._assembled and not truncated:
            self._compare_json(_assembled(golden_frames), _assembled(live_frames), None, out)
            return
        if truncated and len(live_frames) >= len(golden_frames):
            # the recording stopped early: compare only what it holds
            live_frames = live_frames[: len(golden_frames)]
        if len(golden_frames) == len(live_frames):
            if self._now is not None:
                fast = False  # the checked places are decided by their checks
            elif len(golden_frames) == len(expected.events) == len(actual.events):
                # nothing left out: the bodies are the frames' canonical serialization already
                fast = self._fast.matches(expected.body, actual.body)
            else:
                fast = self._fast.matches_frames(golden_frames, live_frames)
            if fast:
                return
            found = len(out)
            for index, (g, a) in enumerate(zip(golden_frames, live_frames, strict=True)):
                self._compare_frame(g, a, index + 1, out)
            if len(out) > found:
                self._learn_from_moved_frames(golden_frames, live_frames)
            return
        pairs = align(
            [self._frame_key(f) for f in golden_frames], [self._frame_key(f) for f in live_frames]
        )
        missing = [i + 1 for i, j in pairs if j is None and i is not None]
        extra = [j + 1 for i, j in pairs if i is None and j is not None]
        notes = []
        if missing:
            notes.append(
                "missing "
                + ", ".join(
                    f"recorded frame {n} ({_frame_summary(golden_frames[n - 1])})" for n in missing
                )
            )
        if extra:
            notes.append(
                "unexpected "
                + ", ".join(f"live frame {n} ({_frame_summary(live_frames[n - 1])})" for n in extra)
            )
        out.append(
            Mismatch(
                "frames",
                len(golden_frames),
                len(live_frames),
                message="; ".join(notes) + (" (the recording is truncated)" if truncated else ""),
            )
        )
        for i, j in pairs:
            if i is not None and j is not None:
                self._compare_frame(golden_frames[i], live_frames[j], j + 1, out)

    def learn_frames(
        self,
        golden: Exchange,
        live: Iterable[SseEvent],
        start: int = 0,
        number: int | None = None,
    ) -> None:
        """Pair recorded frame i with live frame i (from `start`, pings left out) of a stream
        still open, verdict dropped: it is reported once, when compared whole (rule 3 makes
        pairing the same values again harmless)."""
        self._now = None if self._checks is None else self._checks.for_exchange(golden, number)
        self._assembled = self._rules_assemble is not None and self._rules_assemble(
            self._file, number
        )
        pairs = zip(real_frames(golden.response.events or ()), real_frames(live), strict=False)
        self._quiet = True
        try:
            for index, (g, a) in enumerate(list(pairs)[start:], start + 1):
                if self._assembled and _frame_summary(g) != _frame_summary(a):
                    continue  # cut otherwise: frame i is not the same event (paired when whole)
                self._compare_frame(g, a, index, [])
        finally:
            self._quiet = False

    def _learn_from_moved_frames(self, golden: list[SseEvent], live: list[SseEvent]) -> None:
        """After frames that came in another order were reported, pair the values of each
        recorded frame with those of the live frame of the same shape (`_frame_key`) that sits
        elsewhere: the artifact's id and the status timestamps are then known (for the
        requests that carry them, and for --update, which keeps the recorded values), not
        new. What this comparison finds is not reported: the frames were reported in order."""
        golden_keys = [self._frame_key(frame) for frame in golden]
        live_keys = [self._frame_key(frame) for frame in live]
        if golden_keys == live_keys:
            return  # nothing moved: compared in place already
        waiting: dict[str, list[int]] = {}
        for j, key in enumerate(live_keys):
            waiting.setdefault(key, []).append(j)
        self._quiet = True
        try:
            for i, key in enumerate(golden_keys):
                candidates = waiting.get(key)
                if candidates:
                    j = candidates.pop(0)
                    if i != j:
                        self._compare_frame(golden[i], live[j], i + 1, [])
        finally:
            self._quiet = False

    def _frame_key(self, frame: SseEvent) -> str:
        data: Any = None
        if frame.data is not None:
            data = json_value(frame.data)
            data = (
                self._walk.wildcard(data)
                if data is not NOT_JSON
                else self._wildcard_text(frame.data)
            )
        return json.dumps([frame.event, data], sort_keys=True)

    def _compare_frame(
        self, expected: SseEvent, actual: SseEvent, frame: int, out: list[Mismatch]
    ) -> None:
        if expected.event != actual.event:
            out.append(Mismatch("event", _opt(expected.event), _opt(actual.event), frame))
        if expected.retry != actual.retry:
            out.append(Mismatch("retry", _opt(expected.retry), _opt(actual.retry), frame))
        if expected.id != actual.id:
            if expected.id is None or actual.id is None:
                out.append(Mismatch("id", _opt(expected.id), _opt(actual.id), frame))
            else:
                problem = self._compare_text(expected.id, actual.id)
                if problem is not None:
                    out.append(Mismatch("id", problem[0], problem[1], frame, problem[2]))
        if expected.data is None or actual.data is None:
            if expected.data != actual.data:
                out.append(Mismatch("data", _opt(expected.data), _opt(actual.data), frame))
            return
        expected_value = json_value(expected.data)
        actual_value = json_value(actual.data)
        if expected_value is not NOT_JSON and actual_value is not NOT_JSON:
            self._compare_json(expected_value, actual_value, frame, out)
        elif expected_value is NOT_JSON and actual_value is NOT_JSON:
            self._compare_raw(expected.data.encode(), actual.data.encode(), "data", frame, out)
        else:
            out.append(
                Mismatch(
                    "data",
                    _short(expected.data),
                    _short(actual.data),
                    frame,
                    f"expected {_body_kind(expected_value)}, got {_body_kind(actual_value)}",
                )
            )

    def _compare_json(
        self,
        expected: Any,
        actual: Any,
        frame: int | None,
        out: list[Mismatch],
        *,
        status: bool = False,
    ) -> None:
        """The walk, on a body or frame whose checked places (if any) were decided first;
        `status`: the body is a failed gRPC call's google.rpc.Status."""
        if self._now is not None:
            expected, actual = self._now.split(expected, actual, frame, out, run=not self._quiet)
        self._walk.compare_json(expected, actual, frame, out, status=status)


_STATUS_TRAILERS = frozenset({grpc.STATUS_DETAILS, grpc.GRPC_MESSAGE})


def _other_trailers(fields: Iterable[tuple[str, str]]) -> Headers:
    """The trailers but those that hold a failed call's status."""
    return Headers(
        [(name, value) for name, value in fields if name.lower() not in _STATUS_TRAILERS]
    )


def _status_of(fields: Iterable[tuple[str, str]]) -> Any:
    """The google.rpc.Status a failed stream's trailers hold: `grpc-status-details`' JSON,
    else its `grpc-message` as the Status's `message` (`recorder.bindings.grpc.response_of`)."""
    values = {name.lower(): value for name, value in fields}
    details = values.get(grpc.STATUS_DETAILS)
    if details is not None:
        value = json_value(details)
        return value if value is not NOT_JSON else {grpc.STATUS_DETAILS: details}
    message = values.get(grpc.GRPC_MESSAGE)
    return {} if message is None else {"message": message}


def _assembled(frames: list[SseEvent]) -> Any:
    """A stream's frames as the client assembles them (`recorder.rules.assembly.assemble`; a
    frame whose data is not JSON stands as its text)."""
    values = []
    for frame in frames:
        value = json_value(frame.data) if frame.data is not None else None
        values.append(frame.data if value is NOT_JSON else value)
    return assemble(values)


def _fields_by_name(headers: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Lower-case name -> values, names in first-appearance order."""
    fields: dict[str, list[str]] = {}
    for name, value in headers:
        fields.setdefault(name.lower(), []).append(value)
    return fields


def _normal_content_type(value: str | None) -> str:
    if not value:
        return ""
    kind, _, params = value.partition(";")
    normal = [p.strip().lower().replace(" ", "") for p in params.split(";") if p.strip()]
    return ";".join([kind.strip().lower(), *sorted(normal)])


def _opt(value: Any) -> Any:
    return ABSENT if value is None else value


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:199] + "…"


def _body_kind(value: Any) -> str:
    if value is EMPTY:
        return "an empty body"
    if value is NOT_JSON:
        return "a non-JSON body"
    return "a JSON body"


def _describe_body(value: Any, body: bytes) -> Any:
    if value is EMPTY:
        return ""
    if value is NOT_JSON:
        return _short(body.decode("utf-8", errors="replace"))
    return value


def _frame_summary(frame: SseEvent) -> str:
    """`statusUpdate TASK_STATE_COMPLETED`, `artifactUpdate`, `event: error` ... for messages."""
    parts = []
    if frame.event is not None:
        parts.append(f"event: {frame.event}")
    if frame.data is not None:
        value = json_value(frame.data)
        if isinstance(value, dict):
            payload = value.get("result", value)
            if isinstance(payload, dict) and payload:
                name = next(iter(payload))
                parts.append(name)
                inner = payload.get(name)
                if isinstance(inner, dict):
                    status = inner.get("status")
                    if isinstance(status, dict) and isinstance(status.get("state"), str):
                        parts.append(status["state"])
            elif "error" in value:
                parts.append("error")
        else:
            parts.append("data")
    return " ".join(parts) or "frame"
