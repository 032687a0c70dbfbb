"""Bless (`--update`): a live reply with its generated values put back to the recorded ones.

What a live reply paired (rule 3, `recorder.rules.pairing`) goes back to its recorded value, and
each paired live agent address to the recorded one, as the recorded reply spells it (rule 5,
`recorder.replay.verdict.strings`), so that updating a transcript changes only what really changed.
"""

from __future__ import annotations

import dataclasses

from recorder.format.model import Headers, Response
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.strings import Addresses, map_json_strings
from recorder.rules.pairing import AliasMap, PairingRules

__all__ = ["Bless"]


class Bless:
    """Puts live replies back into recorded terms from the pairs in `aliases`."""

    def __init__(self, rules: PairingRules, aliases: AliasMap, addresses: Addresses) -> None:
        self._addresses = addresses
        self._ignored_headers = rules.rules.ignored_headers
        self._shapes = rules.shapes
        self._live_to_golden = aliases.live_to_golden
        self._golden_text = ""  # the recorded reply being blessed: how it spells addresses
        self.last_match: tuple[Response, Response | LiveReply] | None = None
        """The recorded and the live reply of the last `compare` that found no mismatch."""

    def _backward(self, text: str) -> str:
        """A live string with every paired live value put back to its recorded value."""
        table = self._live_to_golden
        golden = table.get(text)
        if golden is not None:
            return golden
        if self._addresses.may_hold(text):
            text = self._addresses.backward(text, self._golden_text)
        if self._shapes is not None and table:
            text = self._shapes.sub(lambda m: table.get(m.group(), m.group()), text)
        return text

    def _backward_json_text(self, text: str) -> str:
        """JSON text with its strings mapped back; formatting and member order kept."""
        return map_json_strings(text, self._backward)

    def bless(
        self, golden: Response, live: Response | LiveReply, *, matched: bool | None = None
    ) -> Response:
        """The live reply with its generated values put back to the recorded ones (for --update).

        Call after `compare` for the same exchange: right after it, or (better) once the whole
        transcript is compared, passing `matched` (whether that compare found no mismatch), so
        that values a later exchange pairs are put back too. When the compare found no
        mismatch, the recorded reply is kept as it is: re-blessing an unchanged transcript
        gives the same bytes (also where timestamps shared a clock tick in one run only, and
        where only ignored places changed). Otherwise values paired with a recorded value get
        that value back and new values keep their live value; the live agent address becomes
        the recorded one. Headers: the recorded order is kept; an ignored header keeps its
        recorded value (or is left out when only live has it, e.g. Content-Length and
        Transfer-Encoding, which recordings never hold); others take the live value.
        """
        if matched:
            return golden
        if matched is None and self.last_match is not None:
            matched_golden, matched_live = self.last_match
            if matched_golden is golden and matched_live is live:
                # it matched: every value pairs in place (timestamps too), nothing else counts
                return golden
        if isinstance(live, LiveReply):
            live = live.response
        # the agent's addresses as this recorded reply spells them (localhost, 127.0.0.1 …)
        self._golden_text = golden.body.decode("utf-8", errors="replace")
        headers = self._bless_headers(golden.headers, live.headers)
        if live.events is not None:
            events = tuple(
                dataclasses.replace(
                    event,
                    data=None if event.data is None else self._backward_json_text(event.data),
                    id=None if event.id is None else self._backward(event.id),
                )
                for event in live.events
            )
            return live.with_content(headers, events=events)
        body = live.body
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            if live.json is not None:
                new_text = self._backward_json_text(text)
            else:
                new_text = self._backward(text)
            body = new_text.encode()
        return live.with_content(headers, body=body)

    def _bless_headers(self, golden: Headers, live: Headers) -> Headers:
        ignored = self._ignored_headers
        out: list[tuple[str, str]] = []
        done: set[str] = set()
        for name, value in golden:
            folded = name.lower()
            if folded in ignored:
                out.append((name, value))
                continue
            if folded in done:
                continue
            done.add(folded)
            for live_value in live.get_all(name):
                out.append((name, self._backward(live_value)))
        for name, value in live:
            folded = name.lower()
            if folded in ignored or folded in done or golden.get(name) is not None:
                continue
            out.append((name, self._backward(value)))
        return Headers(out)
