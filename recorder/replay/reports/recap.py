"""What the terminal report says once, not file by file: the closing recap of the exchanges
that did not pass, and one line for a run of files the agent was gone for.

    failing exchanges:
      ✗ transcripts/02-review.http#1 (SendMessage: review a diff): $.result.task.status.state: …
      ✗ transcripts/04-cards.http#1 (Agent card): error: the agent closed the connection …
    6 transcripts, 10 exchanges: 8 passed, 1 failed, 1 error

The recap comes at the end, just above the summary line (pytest's short test summary: the last
line of a CI log stays the verdict): a failure printed a thousand lines up is named again,
`FILE#N` as `recorder render` takes it, with the title and the first mismatch. It is bounded
(`RECAP_LIMIT` entries, then `… and N more`); the JUnit and JSON reports hold every exchange.
Exchanges not played (an earlier one of their file got no reply, or `-x`) follow from an entry
and are not listed.

When the agent goes away mid-run, each later file fails fast on its first exchange (one quick
connection attempt, `recorder.replay.watch`) and the rest of it is not played. Two or more
such files in a row are one line, in the report and in the recap:

    transcripts/03-streaming.http  ✗ 4 files to transcripts/06-subscribe.http, 7 exchanges
        not played: cannot reach the agent at http://127.0.0.1:41242: connection refused

So are the files `-x` left unplayed after the first failing one (in the report only: no
exchange of theirs was played, so none is in the recap).

Pure: values in, text out (the report escapes, styles and writes it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult

__all__ = ["RECAP_LIMIT", "agent_gone", "gone_text", "recap_entries", "recap_entry", "unsent"]

RECAP_LIMIT = 50


def agent_gone(result: TranscriptResult) -> str | None:
    """Why no exchange of the file was sent when the agent was known gone (the first one's
    quick connection attempt failed, the rest were not played); None for any other file."""
    exchanges = result.exchanges
    if not exchanges or not exchanges[0].agent_down:
        return None
    if all(e.agent_down or not e.played for e in exchanges):
        return exchanges[0].error
    return None


def unsent(result: TranscriptResult) -> str | None:
    """Why no exchange of the file was sent, when one reason holds for the whole file: the
    agent was gone (`agent_gone`), or -x stopped the run before the file; else None."""
    gone = agent_gone(result)
    if gone is not None:
        return gone
    reasons = {e.error for e in result.exchanges if not e.played}
    if result.exchanges and all(not e.played for e in result.exchanges) and len(reasons) == 1:
        return (reasons.pop() or "").removeprefix("not played: ")
    return None


def gone_text(results: Sequence[TranscriptResult]) -> str:
    """`4 files to LAST, 8 exchanges not played: why`: what the line of a run of files none of
    whose exchanges was sent, for one reason (`unsent`), says after the first file's path."""
    count = sum(len(r.exchanges) for r in results)
    files = "file" if len(results) == 1 else "files"
    exchanges = "exchange" if count == 1 else "exchanges"
    return (
        f"{len(results)} {files} to {results[-1].path}, {count} {exchanges} not played: "
        f"{unsent(results[0]) or ''}"
    )


def recap_entries(result: PlayResult) -> list[str]:
    """The recap's entries, one per exchange that did not pass and was played (a run of files
    the agent was gone for is one); none when everything passed (with --update: when every
    differing file was rewritten). Raw text: the report escapes and bounds it."""
    return list(_entries(result))


def _entries(result: PlayResult) -> Iterator[str]:
    gone: list[TranscriptResult] = []
    for transcript in result.transcripts:
        if agent_gone(transcript) is not None:
            gone.append(transcript)
            continue
        if gone:
            yield _gone_entry(gone)
            gone = []
        if result.update and transcript.updated:
            continue  # rewritten: its differences are the new goldens
        for exchange in transcript.exchanges:
            if exchange.played and not exchange.passed:
                yield recap_entry(transcript.path, exchange)
    if gone:
        yield _gone_entry(gone)


def _gone_entry(gone: Sequence[TranscriptResult]) -> str:
    if len(gone) == 1:
        return recap_entry(gone[0].path, gone[0].exchanges[0])
    return f"{gone[0].path}#{gone[0].exchanges[0].number}: {gone_text(gone)}"


def recap_entry(path: str, exchange: ExchangeResult) -> str:
    """`transcripts/02-review.http#1 (SendMessage: review a diff): $.a: expected …` (the first
    mismatch, and how many more), or `…: error: why`."""
    title = f" ({exchange.title})" if exchange.title else ""
    head = f"{path}#{exchange.number}{title}"
    if exchange.error is not None:
        return f"{head}: error: {exchange.error}"
    trials = exchange.trials
    mismatches = exchange.mismatches
    lead = ""
    if trials is not None and not mismatches:
        # --trials: the verdict is the rate; the first failing trial says what went wrong
        lead = f"{trials.passed}/{trials.runs} trials passed (needs {trials.needed})"
        first_failure = trials.failures[0] if trials.failures else None
        if first_failure is None:
            return f"{head}: {lead}"
        if not first_failure.mismatches:
            return f"{head}: {lead}; trial {first_failure.trial}: error: {first_failure.error}"
        lead += f"; trial {first_failure.trial}: "
        mismatches = first_failure.mismatches
    if not mismatches:
        return f"{head}: did not pass"
    first = mismatches[0]
    text = first.describe()
    if first.frame is not None:
        text = f"frame {first.frame}: {text}"
    more = len(mismatches) - 1
    if more:
        text += f" (and {more} more)"
    return f"{head}: {lead}{text}"
