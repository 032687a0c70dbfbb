"""What a stand-in did, told when it stops (`recorder serve`'s closing report, in text and
JSON): which recorded exchanges it served and how often, which it left unused, the requests
it could not match, the ones relayed to the fallback agent, the push deliveries sent, and the
faults it injected. Pure: the stand-in's counts in, a value and its text out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recorder.serve.faults import Fired
from recorder.serve.steps import Step

__all__ = ["Played", "ServeReport", "report_json", "report_text", "serve_report"]

_LISTED = 20  # lines listed per part of the text report (all of them in the JSON)


@dataclass(frozen=True)
class Played:
    """A recorded exchange: where it is (`file:line`), its title, how often it was served."""

    where: str
    title: str
    times: int


@dataclass(frozen=True)
class ServeReport:
    """What a stand-in served, left unused and could not match (push deliveries, which
    it sends rather than answers, are counted apart)."""

    served: tuple[Played, ...]
    unused: tuple[Played, ...]
    unmatched: tuple[tuple[str, str], ...]  # (the request, why), the first 1,000
    unmatched_count: int
    relayed: int
    delivered: int
    delivery_failures: int
    faults: tuple[Fired, ...]

    @property
    def requests(self) -> int:
        """The requests answered from the recording, unmatched, relayed, or answered by
        a fault instead (an error or a status)."""
        replaced = sum(1 for fired in self.faults if fired.fault.kind in ("error", "status"))
        return sum(p.times for p in self.served) + self.unmatched_count + self.relayed + replaced


def serve_report(
    steps: Sequence[Sequence[Step]],
    served: Mapping[tuple[int, int], int],
    *,
    unmatched: Sequence[tuple[str, str]] = (),
    unmatched_count: int = 0,
    relayed: int = 0,
    delivered: int = 0,
    delivery_failures: int = 0,
    faults: Sequence[Fired] = (),
) -> ServeReport:
    """The report of a stand-in over `steps` that served each (file, index) of `served`
    that many times."""
    played: list[Played] = []
    unused: list[Played] = []
    for file in steps:
        for step in file:
            if step.exchange.push_config is not None:
                continue  # (a delivery the stand-in sends, not a reply)
            times = served.get((step.file, step.index), 0)
            (played if times else unused).append(Played(step.where, step.title, times))
    return ServeReport(
        tuple(played),
        tuple(unused),
        tuple(unmatched),
        max(unmatched_count, len(unmatched)),
        relayed,
        delivered,
        delivery_failures,
        tuple(faults),
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def report_text(report: ServeReport, *, verbose: bool = False) -> str:
    """The report as the terminal shows it: a summary line, then the unmatched requests,
    the unused exchanges, the faults injected (each list cut at 20 lines unless `verbose`),
    and with `verbose` every exchange served."""
    total = len(report.served) + len(report.unused)
    summary = (
        f"served {len(report.served)} of {_plural(total, 'recorded exchange')} "
        f"({_plural(report.requests, 'request')}); {len(report.unused)} unused; "
        f"{report.unmatched_count} unmatched"
    )
    if report.relayed:
        summary += f"; {report.relayed} relayed"
    if report.delivered or report.delivery_failures:
        word = "push delivery" if report.delivered == 1 else "push deliveries"
        summary += f"; {report.delivered} {word} sent"
        if report.delivery_failures:
            summary += f" ({report.delivery_failures} not)"
    if report.faults:
        summary += f"; {_plural(len(report.faults), 'fault')} injected"
    lines = [summary]
    limit = None if verbose else _LISTED

    def part(title: str, items: Sequence[str]) -> None:
        if not items:
            return
        lines.append(f"{title}:")
        shown = items if limit is None else items[:limit]
        lines.extend(f"  {item}" for item in shown)
        if len(shown) < len(items):
            lines.append(f"  ... and {len(items) - len(shown)} more (-v, or the JSON report)")

    part("unmatched", [f"{request}: {why}" for request, why in report.unmatched])
    part("unused", [f"{p.where} {p.title}" for p in report.unused])
    part(
        "faults",
        [
            f"{f.request}: {f.fault.describe()}" + (f" ({f.exchange})" if f.exchange else "")
            for f in report.faults
        ],
    )
    if verbose:
        part("served", [f"{p.where} {p.title} x{p.times}" for p in report.served])
    return "\n".join(lines) + "\n"


def report_json(report: ServeReport) -> dict[str, Any]:
    """The report as JSON (`recorder serve --json-report FILE`)."""

    def played(items: Sequence[Played]) -> list[dict[str, Any]]:
        return [{"exchange": p.where, "title": p.title, "times": p.times} for p in items]

    return {
        "summary": {
            "recorded": len(report.served) + len(report.unused),
            "served": len(report.served),
            "unused": len(report.unused),
            "requests": report.requests,
            "unmatched": report.unmatched_count,
            "relayed": report.relayed,
            "push_deliveries": report.delivered,
            "push_delivery_failures": report.delivery_failures,
            "faults": len(report.faults),
        },
        "served": played(report.served),
        "unused": played(report.unused),
        "unmatched": [{"request": request, "why": why} for request, why in report.unmatched],
        "faults": [
            {
                "fault": fired.fault.number,
                "line": fired.fault.line,
                "kind": fired.fault.kind,
                "what": fired.fault.describe(),
                "request": fired.request,
                "exchange": fired.exchange,
            }
            for fired in report.faults
        ],
    }
