"""Carry-forward: a recorded request made live, and the client's own values it carries.

A request of a replay is the recorded one with every recorded generated value that an earlier
reply paired (rule 3, `recorder.rules.pairing`) replaced by its live value, and every recorded agent
address paired with a live one (rule 5, `recorder.replay.verdict.strings`: the base, a port a card
listed) by that live address, in the body, the target and the headers (Host always names the live
base); values not learned (the client's own, rule 2) are sent as recorded, and learned as
client values before the reply is compared (addresses nothing paired yet: as the client's own
addresses, which pair with themselves).
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from recorder.format.model import Headers, Request
from recorder.replay.verdict.strings import Addresses, map_json_strings
from recorder.rules.pairing import AliasMap, PairingRules

__all__ = ["CarryForward"]

_SAME_HEADERS = Headers()  # marks "prepare leaves these headers as they are"


class CarryForward:
    """Requests made live from the pairs in `aliases`; rule 2's client values learned."""

    def __init__(self, rules: PairingRules, aliases: AliasMap, addresses: Addresses) -> None:
        self._rules = rules
        self._shapes = rules.shapes
        self._seen = aliases.seen
        self._client = aliases.client
        self._golden_to_live = aliases.golden_to_live
        self._addresses = addresses
        self._live_host = addresses.live_host
        self._scanned: tuple[Request, frozenset[str]] | None = None
        self._forwarded_headers: dict[tuple[tuple[str, str], ...], Headers] = {}

    # --- client values (rule 2) ---------------------------------------------------------------

    def _scan(self, request: Request) -> frozenset[str]:
        """`PairingRules.request_values`, cached for the last request seen, which `prepare` and
        then `compare` ask about in turn."""
        if self._scanned is not None and self._scanned[0] is request:
            return self._scanned[1]
        result = self._rules.request_values(request)
        self._scanned = (request, result)
        return result

    def unpaired(self, request: Request) -> set[str]:
        """The values of a recorded request that look generated (a shape, or a value seen at a
        generated place of an earlier reply) but have no live counterpart and are not the
        client's own: `prepare` sends them as recorded. The player looks for them in the
        earlier recorded replies to explain the mismatches that follow."""
        candidates = self._scan(request) - self._golden_to_live.keys() - self._client
        shape_kind = self._rules.shape_kind
        return {
            value for value in candidates if value in self._seen or shape_kind(value) is not None
        }

    def learn_client_values(self, request: Request) -> None:
        """Rule 2: what the recorded request carries, except values learned from replies; and
        the addresses it carries that nothing paired yet (rule 5: `Addresses.claim`)."""
        found = self._scan(request) - self._golden_to_live.keys()
        if found:
            self._client |= found
        addresses = self._addresses
        for text in self._address_texts(request):
            addresses.claim(text)

    def _address_texts(self, request: Request) -> list[str]:
        """The parts of a recorded request that may hold an agent address (Host aside)."""
        texts = [value for name, value in request.headers if name.lower() != "host"]
        if request.body:
            texts.append(request.body.decode("utf-8", errors="replace"))
        texts.append(unquote(request.target))
        everything = "\n".join(texts)
        return [everything] if self._addresses.may_hold(everything) else []

    # --- carry-forward ----------------------------------------------------------------------

    def _forward(self, text: str) -> str:
        """A recorded request string with every learned recorded value and every paired agent
        address made live."""
        mapped = self._golden_to_live.get(text)
        if mapped is not None:
            return mapped
        return self._forward_shapes_only(text)

    def _moves_addresses(self, text: str) -> bool:
        """Whether `text` may hold a recorded address paired with another live one."""
        return self._addresses.moved and self._addresses.may_hold(text)

    def prepare(self, request: Request) -> Request:
        """The recorded request as it must be sent live: learned values and the address made live.

        Values not learned (the client's own) are sent as recorded.
        """
        learned = bool(self._golden_to_live) and not self._golden_to_live.keys().isdisjoint(
            self._scan(request)
        )
        text: str | None = None
        if request.body:
            try:
                text = request.body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        body: bytes | None = None
        target: str | None = None
        moved = text is not None and self._moves_addresses(text)
        if learned or moved or self._moves_addresses(request.target):
            if text is not None and (learned or moved):
                # JSON: string by string, in the text, so the canonical layout stays as it is
                if request.is_json:
                    new_text = map_json_strings(text, self._forward)
                else:
                    new_text = self._forward_shapes_only(text)
                if new_text != text:
                    body = new_text.encode()
            forwarded = self._forward_target(request.target)
            if forwarded != request.target:
                target = forwarded
        headers = self._forward_headers(request.headers, learned=learned)
        if headers is request.headers and body is None and target is None:
            return request
        # the body keeps its (canonical) layout: no need to parse and print it again
        return request.with_values(
            target=target,
            headers=None if headers is request.headers else headers,
            body_text=body,
        )

    def _forward_shapes_only(self, text: str) -> str:
        """`text` with each learned shape and each paired agent address made live."""
        if self._moves_addresses(text):
            text = self._addresses.forward(text)
        if self._shapes is None or not self._golden_to_live:
            return text
        table = self._golden_to_live
        return self._shapes.sub(lambda m: table.get(m.group(), m.group()), text)

    def _forward_segment(self, raw: str, *, plus_is_space: bool = False) -> str:
        decoded = unquote(raw.replace("+", " ") if plus_is_space else raw)
        new = self._forward(decoded)
        if new == decoded and ":" in decoded:
            # AIP-136 custom methods: /tasks/{id}:cancel
            head, colon, tail = decoded.partition(":")
            mapped = self._golden_to_live.get(head)
            if mapped is not None:
                new = mapped + colon + tail
        if new == decoded:
            return raw  # keep the recorded encoding byte for byte
        return quote(new, safe="!$&'()*,;=:@-._~" + ("" if plus_is_space else "+"))

    def _forward_target(self, target: str) -> str:
        path, question, query = target.partition("?")
        new_path = "/".join(self._forward_segment(s) for s in path.split("/"))
        if not question:
            return new_path
        items = []
        for item in query.split("&"):
            name, equals, value = item.partition("=")
            if equals:
                items.append(f"{name}={self._forward_segment(value, plus_is_space=True)}")
            else:
                items.append(item)
        return f"{new_path}?{'&'.join(items)}"

    def _forward_headers(self, headers: Headers, *, learned: bool) -> Headers:
        """Headers with the live Host, the live address and (when `learned` values may be in
        them) learned values made live. Without learned values the result depends only on the
        headers, so it is kept per distinct header list (a transcript repeats one or two)."""
        key: tuple[tuple[str, str], ...] | None = None
        if not learned:
            key = tuple(headers)
            known = self._forwarded_headers.get(key)
            if known is not None:
                return headers if known is _SAME_HEADERS else known
        out: list[tuple[str, str]] = []
        changed = False
        cacheable = True
        for name, value in headers:
            new = value
            folded = name.lower()
            if folded == "host":
                if self._live_host is not None:
                    new = self._live_host
            else:
                forward = learned or folded == "content-length"  # _scan skips content-length
                if self._moves_addresses(new):
                    new = self._addresses.forward(new)
                    forward = True
                    cacheable = False  # depends on the addresses paired by now
                if forward and self._golden_to_live:
                    new = self._forward(new)
                    cacheable = False  # depends on what is learned by now
            changed = changed or new != value
            out.append((name, new))
        result = Headers(out) if changed else headers
        if key is not None and cacheable:
            self._forwarded_headers[key] = result if changed else _SAME_HEADERS
        return result
