"""A call's exchange as recorded (`Recording`'s builder): the request as forwarded (with
`Host:` naming the upstream as the proxy addressed it), the reply without hop-by-hop fields
and Content-Length; header names in conventional case; secrets replaced by
`{{PLACEHOLDER}}`s (`recorder.secrets.redact`). An event stream is kept as its frames; one that
ended inside a frame is marked truncated and keeps its whole frames. A common buffered exchange is
made as its text straight from its bytes (`recorder.record.proxy.direct`: the same text).
"""

from __future__ import annotations

from recorder.format.model import Exchange, Headers, Request, Response, header_text
from recorder.format.sse import SseDecoder
from recorder.record.naming import exchange_title, header_case, operation_name
from recorder.record.proxy.call import Call, Recorded
from recorder.record.proxy.direct import Direct
from recorder.record.store.filetext import Block
from recorder.record.transport.upstream import UpstreamReply
from recorder.secrets.redact import Redactor

__all__ = ["Builder"]


class Builder:
    """Makes calls into exchanges (or, for common ones, their text)."""

    def __init__(self, host_header: str, redactor: Redactor) -> None:
        self._host_header = host_header
        self.direct = Direct(host_header, redactor)  # the writer's blocks of common exchanges

    def exchange(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        *,
        body: bytes,
        decoder: SseDecoder | None = None,
        truncated: bool = False,
    ) -> Exchange:
        """`call`'s exchange: `upstream`'s status, the `kept` reply headers, `body` (or the
        frames `decoder` read; `truncated`: cut short)."""
        redactor = call.redactor
        recorded = call.recorded
        if recorded is None or recorded.request is None:
            recorded = self.recorded(call)
        request, title = recorded.request, recorded.title
        assert request is not None  # (`recorded` makes its model)
        response_headers = Headers(
            [
                (header_case(n.decode("latin-1")), header_text(v))
                for n, v in kept
                if n.lower() != b"content-length"
            ]
        )
        response_headers = redactor.redact_headers(response_headers)
        # a stream that ended inside a frame is marked truncated and keeps its whole frames
        # (the player compares those), not one blob that no frame can be compared with
        whole_frames = decoder is not None and decoder.lossless
        ended_whole = decoder is not None and decoder.close()
        cut_in_frame = whole_frames and not ended_whole
        truncated = truncated or cut_in_frame
        if decoder is not None and (ended_whole or (cut_in_frame and decoder.events)):
            response = Response(
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                headers=response_headers,
                events=redactor.redact_events(decoder.events),
            )
        else:
            response = Response(
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                headers=response_headers,
                body=redactor.redact_body(body, response_headers.get("Content-Type")),
            )
        return Exchange(
            request=request,
            response=response,
            title=title,
            truncated=truncated,
        )

    def _request_model(self, call: Call) -> Request:
        """The request as recorded: as forwarded, Host naming the upstream, secrets out."""
        redactor = call.redactor
        request_headers = Headers(
            [("Host", self._host_header)]
            + [(header_case(n.decode("latin-1")), header_text(v)) for n, v in call.request.headers]
        )
        request_headers = redactor.redact_headers(request_headers)
        return Request(
            method=call.request.method,
            target=redactor.redact_target(call.request.target),
            headers=request_headers,
            body=redactor.redact_body(call.request.body, request_headers.get("Content-Type")),
        )

    def recorded(self, call: Call) -> Recorded:
        """`call.recorded`, made: the request as recorded, its title and operation."""
        request = self._request_model(call)
        operation = operation_name(request)
        # (without a description the title is the operation: not worked out twice)
        description = call.description
        title = exchange_title(request, description) if description else operation
        call.recorded = recorded = Recorded(title, operation, request, dict(call.redactor.seen))
        return recorded

    def built(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> Exchange | Block:
        """A buffered reply's exchange as recorded: its block, made straight from its bytes,
        when it is a common one (`recorder.record.proxy.direct`: the same text), else its
        model (`exchange`)."""
        redactor = call.redactor
        if call.routing.during is None and call.recorded is None and not redactor.seen:
            found = self.direct.block(
                method=call.request.method,
                target=call.request.target,
                headers=call.request.headers,
                body=call.request.body,
                description=call.description,
                redactor=redactor,
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                kept=kept,
                reply=body,
                parsed=call.reply.parsed,
            )
            call.reply.parsed = None  # (read: not held while the call is)
            if found is not None:
                block, operation, title, sent = found
                call.recorded = Recorded(title, operation, sent_secrets=sent or {})
                return Block(block, title)
            redactor.seen.clear()  # (what the attempt took out: the model takes it out again)
        return self.exchange(call, upstream, kept, body=body)
