"""Which webhook URLs the recorder delivers push notifications to (pure: no name is looked up).

The agent sees only the recorder's receiver; the recorder then POSTs each delivery to the
webhook the client registered. So that it never delivers where the agent would not, it screens
that URL at least as the a2a-sdk's recommended validator does
(`a2a.utils.push_url_validator.validate_push_notification_url`), and more strictly where
that validator is silent:

1. http and https only (`file:`, `ftp:`, `gopher:` … refused), and a host.
2. Never the recorder's own listeners (`WebhookScreen.own`: its HTTP and gRPC listen
   addresses, its `--downstream` listeners, and the receiver address it advertises): a
   delivery aimed at `http://127.0.0.1:41241/a2a/jsonrpc` would re-enter the proxy as a
   request.
3. An IPv4 address only in its usual dotted spelling: `127.1`, `2130706433`, `0x7f.1`,
   `0177.0.0.1` (what `inet_aton`, and so a connect, reads as 127.0.0.1) and the IPv4-mapped
   `[::ffff:127.0.0.1]` are refused, whatever address they stand for (`ipv4_spelled` reads
   them, for the reason).
4. An address (a literal, or at delivery each address its name resolves to:
   `address_refusal`) that is not public unicast, as the SDK judges it: not global, loopback,
   link-local, multicast, reserved or unspecified (an IPv4-mapped IPv6 address as the IPv4
   address it carries). Loopback (127.0.0.0/8, ::1, `localhost`) only with `loopback=True`
   (`recorder record --push-loopback`: a client and its webhook on this machine, the planner
   and the tests); `0.0.0.0` never.
5. A name is looked up when a delivery goes out (`recorder.record.proxy.push`), every address
   it resolves to screened by rule 4, and the delivery sent to the address screened (a name
   that resolves elsewhere by then is not followed); one that does not resolve is refused.

`refusal` says why a URL is refused (None: not refused so far as can be told without a
lookup). It is what the recorder screens a registration with, on every binding (the gRPC
listener calls it too, through `PushRoom.screen`). `webhook_target` is the one part that is
not pure: the lookup of rule 5, when a delivery goes out (the recorder's and the stand-in's).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import urllib.parse
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["WebhookScreen", "ipv4_spelled", "webhook_target"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK = ipaddress.IPv4Address("127.0.0.1")
# one part of an IPv4 address as `inet_aton` reads it: hex, octal or decimal
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_OCTAL = re.compile(r"0[0-7]+")
_DECIMAL = re.compile(r"[0-9]+")


def ipv4_spelled(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address `host` spells in any form `inet_aton` (and so a connect) reads: one to
    four parts, each decimal, octal (`0177`) or hex (`0x7f`), the last filling the bytes left
    (`127.1`, `2130706433`); None when `host` is no such spelling."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        if _HEX.fullmatch(part):
            numbers.append(int(part[2:], 16))
        elif _OCTAL.fullmatch(part):
            numbers.append(int(part, 8))
        elif _DECIMAL.fullmatch(part) and not (len(part) > 1 and part.startswith("0")):
            numbers.append(int(part))
        else:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for number in head:
        value = value * 256 + number
    return ipaddress.IPv4Address((value << (8 * (4 - len(head)))) + last)


def _literal(host: str) -> Address | None:
    """The address `host` is the usual spelling of (IPv6 without brackets or zone), or None."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def _judged(address: Address) -> Address:
    """The address the SDK judges: an IPv4-mapped IPv6 address's IPv4 address."""
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


@dataclass(frozen=True)
class WebhookScreen:
    """Where the recorder delivers (module docstring). `loopback`: loopback webhooks are
    allowed (local work); `own`: the recorder's listeners and advertised receiver, as
    (host lowercase, port), never delivered to."""

    loopback: bool = False
    own: frozenset[tuple[str, int]] = frozenset()

    def with_own(self, host: str, port: int) -> WebhookScreen:
        """This screen, `host:port` one of the recorder's own too."""
        key = (host.strip("[]").lower(), port)
        return self if key in self.own else WebhookScreen(self.loopback, self.own | {key})

    def refusal(self, url: str) -> str | None:
        """Why the recorder does not deliver to `url` (None: not refused so far as can be
        told without looking a name up; `address_refusal` judges what it resolves to)."""
        try:
            parts = urllib.parse.urlsplit(url)
            explicit = parts.port
        except ValueError:
            return "it is not a URL"
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            return f"it is not an http(s) URL ({scheme or 'no scheme'})"
        host = parts.hostname or ""
        if not host:
            return "it names no host"
        port = explicit if explicit is not None else _DEFAULT_PORTS[scheme]
        if (host, port) in self.own:
            return f"it is the recorder's own address ({_shown(host, port)})"
        address = _literal(host)
        if address is None:
            # (with a trailing dot too: a lookup of such a name is no lookup to make)
            spelled = ipv4_spelled(host.removesuffix("."))
            if spelled is not None:
                return f"it spells the IPv4 address {spelled} as {host!r} (write {spelled})"
            if host == "localhost" or host.endswith(".localhost"):
                return self._loopback_refusal(host, port)
            return None  # a name: its addresses are screened when a delivery goes out
        mapped = getattr(address, "ipv4_mapped", None)
        if mapped is not None:
            return f"it spells the IPv4 address {mapped} as {host!r} (write {mapped})"
        return self.address_refusal(address, port, host=host)

    def address_refusal(self, address: Address | str, port: int, host: str = "") -> str | None:
        """Why the recorder does not deliver to `address` (a literal, or what a webhook's
        name resolves to) on `port` (None: it does)."""
        if isinstance(address, str):
            parsed = _literal(address)
            if parsed is None:
                return f"{address!r} is not an address"
            address = parsed
        judged = _judged(address)
        shown = host or str(address)
        if judged.is_unspecified:
            return f"{shown} is the unspecified address"
        if self._is_own(judged, port):
            return f"it is the recorder's own address ({_shown(shown, port)})"
        if judged.is_loopback:
            return self._loopback_refusal(shown, port)
        if (
            not judged.is_global
            or judged.is_link_local
            or judged.is_multicast
            or judged.is_reserved
        ):
            return f"{shown} is not a public address"
        return None

    def _loopback_refusal(self, host: str, port: int) -> str | None:
        if self._is_own(_LOOPBACK, port):
            return f"it is the recorder's own address ({_shown(host, port)})"
        if not self.loopback:
            return (
                f"{host} is a loopback address (allowed for local work with "
                "`recorder record --push-loopback`)"
            )
        return None

    def _is_own(self, address: Address, port: int) -> bool:
        """Whether `address:port` is one of the recorder's listeners: the address one listens
        on, or a loopback address where one listens on loopback or on every address."""
        for host, own_port in self.own:
            if own_port != port:
                continue
            listener = _literal(host)
            if listener is not None and _judged(listener) == address:
                return True
            if address.is_loopback and (
                host == "localhost"
                or (listener is not None and (listener.is_loopback or listener.is_unspecified))
            ):
                return True
        return False


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def webhook_target(
    url: str, screen: WebhookScreen
) -> tuple[str, list[tuple[bytes, bytes]], dict[str, Any]] | str:
    """Where a delivery to the webhook `url` goes: (the URL to POST to, without its
    credentials; the headers that keep its name when it is pinned to an address; httpx's
    extensions: the name for TLS), or why not (a name whose addresses `screen` refuses, or
    that does not resolve). A name is looked up now and the delivery pinned to an address
    screened, so that it cannot resolve elsewhere between the screen and the connect; a
    literal address is `screen`ed (again) as it is."""
    parts = httpx.URL(url)
    plain = parts.copy_with(username=None, password=None) if parts.userinfo else parts
    host = parts.host
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if _literal(host) is not None or ipv4_spelled(host) is not None:
        reason = screen.refusal(url)
        if reason is not None:
            return reason
        return str(plain), [], {}
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"the webhook's host {host} does not resolve ({exc.strerror or exc})"
    if not found:
        return f"the webhook's host {host} does not resolve"
    for info in found:
        reason = screen.address_refusal(str(info[4][0]), port, host=host)
        if reason is not None:
            return f"{reason} ({host} is {info[4][0]})"
    pinned = plain.copy_with(host=str(found[0][4][0]))
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    return str(pinned), [(b"host", plain.netloc)], extensions
