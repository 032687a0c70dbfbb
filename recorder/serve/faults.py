"""`recorder serve --faults FILE`: the stand-in misbehaving on purpose, so a client's error
paths can be tested (pure: the file read, which fault a request gets, what it sends).

The file (YAML):

    seed: 7                     # for `probability` (optional; else each run differs)
    faults:
      - method: GetTask         # the A2A operation (any binding; 0.3's names too); no
                                # method: every request, the agent card's included
        nth: 2                  # only its 2nd request (a list: [2, 4]); else every one
        probability: 0.5        # each such request with this chance (default 1)
        delay: 1.5              # seconds before the reply (alone, or with a kind below)
        error: TaskNotFoundError        # an A2A error, in the request's binding
      - method: SendMessage
        status: 503             # an HTTP status (a gRPC call: grpc_status, else the
        grpc_status: UNAVAILABLE  # status gRPC maps it to)
      - method: SendStreamingMessage
        cut_after: 1            # the stream cut after N frames (gRPC: N messages, then
                                # UNAVAILABLE); a reply that is no stream: its head and
                                # half its body, then the connection closed
      - method: SubscribeToTask
        malformed_frame: 2      # frame N's data no JSON (gRPC: message N no protobuf);
                                # a reply that is no stream: its body no JSON

A request gets the first fault whose method is its own and whose `nth` and `probability`
let it fire (at most one per request; `nth` counts the requests of the fault's method, the
ones before it included). `error` and `status` replace the reply and leave the recorded
exchange unplayed (a retry gets it); `delay`, `cut_after` and `malformed_frame` spoil the
recorded reply that answers it: a reply that is no stream, cut or malformed, is left unplayed
too (the client could read none of it); a stream counts as played (the client has its first
frames, and the ids they hand out).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import orjson
import yaml

from recorder.bindings import grpc, jsonrpc, rest
from recorder.bindings.operations import AGENT_CARD_PATH, ERRORS, LEGACY_AGENT_CARD_PATH
from recorder.errors import RecorderError
from recorder.format.model import GRPC_METHOD

__all__ = [
    "CUT",
    "DELAY",
    "ERROR",
    "MALFORMED",
    "STATUS",
    "Fault",
    "FaultPlan",
    "Fired",
    "error_reply",
    "grpc_error",
    "load_faults",
    "malformed_frame",
    "operation_of",
    "status_reply",
]

DELAY, ERROR, STATUS, CUT, MALFORMED = "delay", "error", "status", "cut", "malformed"
_KINDS = {"error": ERROR, "status": STATUS, "cut_after": CUT, "malformed_frame": MALFORMED}
_KEYS = frozenset({"method", "nth", "probability", "delay", "grpc_status", *_KINDS})
_CARD = "GetAgentCard"
_DOMAIN = "a2a-protocol.org"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
MALFORMED_TEXT = '{"jsonrpc": "2.0", "result": {"recorder": "a malformed frame'
"""What a malformed frame's data (or a malformed body) is: JSON cut short."""
MALFORMED_MESSAGE = b"\xff\xff\xff\xff"
"""A malformed gRPC message: no protobuf message reads it (a field number 0... cut short)."""
# gRPC's mapping of an HTTP status a call's reply could carry (doc/http-grpc-status-mapping)
_GRPC_OF_HTTP = {400: "INTERNAL", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
_GRPC_OF_HTTP |= {404: "UNIMPLEMENTED", 429: "UNAVAILABLE", 502: "UNAVAILABLE"}
_GRPC_OF_HTTP |= {503: "UNAVAILABLE", 504: "UNAVAILABLE"}


@dataclass(frozen=True)
class Fault:
    """One fault of the file: `number` its place (from 1), `line` its line there."""

    number: int
    line: int
    kind: str  # DELAY, ERROR, STATUS, CUT or MALFORMED
    method: str | None = None
    nth: tuple[int, ...] = ()
    probability: float = 1.0
    delay: float = 0.0
    error: str | None = None
    status: int | None = None
    grpc_status: str | None = None
    frames: int = 0  # CUT: frames sent before the cut; MALFORMED: the frame spoiled (from 1)

    def describe(self) -> str:
        """`fault 2 (GetTask, nth 2): error TaskNotFoundError`."""
        when = [self.method or "any request"]
        if self.nth:
            when.append("nth " + ",".join(str(n) for n in self.nth))
        if self.probability < 1:
            when.append(f"probability {self.probability:g}")
        what = {
            ERROR: f"error {self.error}",
            STATUS: "status " + " / ".join(str(s) for s in (self.status, self.grpc_status) if s),
            CUT: f"cut after {self.frames} frame{'' if self.frames == 1 else 's'}",
            MALFORMED: f"frame {self.frames} malformed",
            DELAY: f"delay {self.delay:g} s",
        }[self.kind]
        if self.kind != DELAY and self.delay:
            what += f" after {self.delay:g} s"
        return f"fault {self.number} ({', '.join(when)}): {what}"


@dataclass(frozen=True)
class Fired:
    """A fault a request got: the fault, the request (`POST /a2a/jsonrpc GetTask`)."""

    fault: Fault
    request: str
    exchange: str | None = None  # the recorded exchange it spoiled (file:line), if one


@dataclass
class FaultPlan:
    """The faults of a file and what each has done so far (the counts per method, the
    random draws: one owner, the stand-in)."""

    faults: tuple[Fault, ...]
    source: str = ""
    seed: int | None = None
    fired: list[Fired] = field(default_factory=list)
    _counts: dict[str | None, int] = field(default_factory=dict)
    _random: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def choose(self, operation: str, request: str) -> Fault | None:
        """The fault the request calling `operation` gets, or None (counted either way)."""
        for method in {operation, None}:
            self._counts[method] = self._counts.get(method, 0) + 1
        for fault in self.faults:
            if fault.method is not None and fault.method != operation:
                continue
            if fault.nth and self._counts[fault.method] not in fault.nth:
                continue
            if fault.probability < 1 and self._random.random() >= fault.probability:
                continue
            return fault
        return None

    def note(self, fault: Fault, request: str) -> int | None:
        """Count `fault` as fired on `request` (the first 1,000 kept): its place in `fired`
        (None: not kept), for `spoiled`."""
        if len(self.fired) >= 1000:
            return None
        self.fired.append(Fired(fault, request))
        return len(self.fired) - 1

    def spoiled(self, place: int | None, exchange: str) -> None:
        """The fault fired at `place` spoils the recorded reply of `exchange` (file:line)."""
        if place is not None:
            self.fired[place] = replace(self.fired[place], exchange=exchange)


# --------------------------------------------------------------------------- the file


def load_faults(path: str) -> FaultPlan:
    """The faults of the YAML file at `path`; RecorderError naming `file:line` and the key
    when it is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise RecorderError(f"{path}: cannot read the faults file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RecorderError(f"{path}: the faults file is not UTF-8 text") from None
    return faults_from_text(text, path)


def faults_from_text(text: str, source: str) -> FaultPlan:
    """`load_faults` of a file's text."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise RecorderError(f"{source}{line}: not YAML: {problem}") from None
    if not isinstance(data, Mapping) or not isinstance(node, yaml.MappingNode):
        raise RecorderError(f"{source}:1: expected a mapping with a `faults` list")
    lines = {str(k.value): (k.start_mark.line + 1, v) for k, v in node.value}
    unknown = sorted(set(map(str, data)) - {"seed", "faults"})
    if unknown:
        raise RecorderError(
            f"{source}:{lines[unknown[0]][0]}: unknown key {unknown[0]!r} (seed, faults)"
        )
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RecorderError(f"{source}:{lines['seed'][0]}: seed: expected an integer")
    raw = data.get("faults")
    if not isinstance(raw, list) or not raw:
        at = lines["faults"][0] if "faults" in lines else 1
        raise RecorderError(f"{source}:{at}: faults: expected a list of faults")
    items = lines["faults"][1]
    assert isinstance(items, yaml.SequenceNode)  # (the list above is its value)
    faults = tuple(
        _fault(item, number, source, item_node.start_mark.line + 1)
        for number, (item, item_node) in enumerate(zip(raw, items.value, strict=True), start=1)
    )
    return FaultPlan(faults, source=source, seed=seed)


def _fault(item: Any, number: int, source: str, line: int) -> Fault:
    where = f"{source}:{line}: faults[{number - 1}]"
    if not isinstance(item, Mapping):
        raise RecorderError(f"{where}: expected a mapping (method, nth, ... and a kind)")
    unknown = sorted(set(map(str, item)) - _KEYS)
    if unknown:
        raise RecorderError(f"{where}: unknown key {unknown[0]!r} ({', '.join(sorted(_KEYS))})")
    kinds = [key for key in _KINDS if key in item]
    if "grpc_status" in item and "status" not in kinds:
        kinds.append("status")
    if len(kinds) > 1:
        raise RecorderError(f"{where}: one kind per fault, got {' and '.join(kinds)}")
    if not kinds and "delay" not in item:
        raise RecorderError(
            f"{where}: no kind: delay, error, status, grpc_status, cut_after or malformed_frame"
        )
    method = item.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            raise RecorderError(f"{where}.method: expected an A2A operation name")
        method = _operation_name(method)
        known = {*grpc.METHODS, _CARD}
        if method not in known:
            raise RecorderError(
                f"{where}.method: {method!r} is no A2A operation ({', '.join(sorted(known))})"
            )
    nth = item.get("nth", ())
    if isinstance(nth, int) and not isinstance(nth, bool):
        nth = (nth,)
    if not isinstance(nth, Sequence) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in nth
    ):
        raise RecorderError(f"{where}.nth: expected a number from 1, or a list of them")
    probability = _number(item, "probability", where, 1.0)
    if not 0 <= probability <= 1:
        raise RecorderError(f"{where}.probability: expected a number from 0 to 1")
    delay = _number(item, "delay", where, 0.0)
    if not 0 <= delay <= 3600:
        raise RecorderError(f"{where}.delay: expected seconds from 0 to 3600")
    kind = _KINDS[kinds[0]] if kinds else DELAY
    fault = Fault(number, line, kind, method, tuple(nth), probability, delay)
    if kind == ERROR:
        error = item["error"]
        if not isinstance(error, str) or _error_name(error) not in ERRORS:
            names = ", ".join(name for name in ERRORS if name != "JSONParseError")
            raise RecorderError(f"{where}.error: expected an A2A error ({names})")
        return _with(fault, error=_error_name(error))
    if kind == STATUS:
        status = item.get("status")
        if status is not None and (
            isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599
        ):
            raise RecorderError(f"{where}.status: expected an HTTP status (100 to 599)")
        code = item.get("grpc_status")
        name = None
        if code is not None:
            try:
                name = grpc.status_name(grpc.status_code(str(code)))
            except ValueError:
                raise RecorderError(
                    f"{where}.grpc_status: expected a gRPC status name (UNAVAILABLE ...)"
                ) from None
            if name == "OK":
                raise RecorderError(f"{where}.grpc_status: OK is no fault")
        return _with(fault, status=status, grpc_status=name)
    if kind in (CUT, MALFORMED):
        key = "cut_after" if kind == CUT else "malformed_frame"
        frames = item[key]
        least = 0 if kind == CUT else 1
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < least:
            raise RecorderError(f"{where}.{key}: expected a number of frames from {least}")
        return _with(fault, frames=frames)
    return fault


def _with(fault: Fault, **values: Any) -> Fault:
    return replace(fault, **values)


def _number(item: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecorderError(f"{where}.{key}: expected a number")
    return float(value)


def _error_name(name: str) -> str:
    """`TaskNotFound`, `TaskNotFoundError`, `TASK_NOT_FOUND` -> `TaskNotFoundError`."""
    for known, error in ERRORS.items():
        if name in (known, known.removesuffix("Error"), error.reason):
            return known
    return name


def _operation_name(name: str) -> str:
    """An operation's 1.0 name from any binding's spelling of it (`tasks/get`, `GetTask`)."""
    legacy = jsonrpc.LEGACY_METHODS.get(name)
    return legacy if legacy is not None else name


# --------------------------------------------------------------------------- a request


def operation_of(method: str, target: str, rpc_method: str | None) -> str:
    """The A2A operation a live request calls (any binding), `GetAgentCard` for a card,
    else `METHOD /path` (which no fault names)."""
    path = urlsplit(target).path
    if method == GRPC_METHOD:
        return grpc.method_of(path) or f"{method} {path}"
    if rpc_method is not None:
        return _operation_name(rpc_method)
    routed = rest.operation_of(method, path)
    if routed is not None:
        return routed
    if method == "GET" and path.endswith((AGENT_CARD_PATH, LEGACY_AGENT_CARD_PATH)):
        return _CARD
    return f"{method} {path}"


def _message(fault: Fault) -> str:
    return f"recorder serve: injected {fault.describe()}"


def error_reply(fault: Fault, rpc_id: Any, is_rpc: bool) -> tuple[int, bytes]:
    """(HTTP status, JSON body) of an `error` fault: a JSON-RPC error (HTTP 200) for a
    JSON-RPC call, else the HTTP+JSON binding's google.rpc.Status with the error's status;
    its ErrorInfo's reason is the one the SDK maps back to the error."""
    assert fault.error is not None
    error = ERRORS[fault.error]
    details = [{"@type": _ERROR_INFO, "reason": error.reason, "domain": _DOMAIN}]
    message = _message(fault)
    if is_rpc:
        return 200, orjson.dumps(jsonrpc.error_response(rpc_id, error.jsonrpc, message, details))
    status = error.http or 500
    name = error.grpc or "INTERNAL"
    return status, orjson.dumps(rest.error_envelope(status, name, message, details))


def status_reply(fault: Fault) -> tuple[int, bytes]:
    """(HTTP status, JSON body) of a `status` fault (a gRPC-only fault: 503)."""
    status = fault.status or 503
    body = {"error": {"code": status, "message": _message(fault)}}
    return status, orjson.dumps(body)


def grpc_error(fault: Fault) -> tuple[str, str, bytes | None]:
    """(gRPC status name, message, grpc-status-details-bin or None) of an `error` or
    `status` fault on a gRPC call."""
    message = _message(fault)
    if fault.kind == ERROR:
        assert fault.error is not None
        error = ERRORS[fault.error]
        name = error.grpc or "INTERNAL"
        details = [{"@type": _ERROR_INFO, "reason": error.reason, "domain": _DOMAIN}]
        status = {"code": grpc.status_code(name), "message": message, "details": details}
        return name, message, grpc.status_details_bin(status)
    if fault.grpc_status is not None:
        return fault.grpc_status, message, None
    return _GRPC_OF_HTTP.get(fault.status or 503, "UNKNOWN"), message, None


def malformed_frame(frame: bytes) -> bytes:
    """An SSE frame with its data replaced by JSON cut short (its other fields kept)."""
    lines = frame.split(b"\n")
    kept = [line for line in lines if line and not line.startswith(b"data")]
    return b"\n".join([*kept, b"data: " + MALFORMED_TEXT.encode()]) + b"\n\n"
