"""Reports of a replay: the terminal report and the JUnit XML file.

The terminal report (the look is in DESIGN.md, "What a user sees"):

    transcripts/02-message-reply.http  ✓ 1 exchange
    transcripts/04-streaming.http      ✗ exchange 1 (SendStreamingMessage), frame 3:
        $.result.statusUpdate.status.state: expected "TASK_STATE_COMPLETED", got "TASK_STATE_FAILED"
    10 transcripts, 37 exchanges: 36 passed, 1 failed

One line per transcript, then one indented line per mismatch; a further failing exchange of
the same file gets its own header line under the first. When every mismatch of an exchange is
in one SSE frame, the frame is named in the header, else on each line. Colour only on a
terminal (or as `--color` says). Above the summary line, the recap names every exchange that
did not pass again, and a run of files the agent was gone for is one line
(`recorder.replay.reports.recap`).

While a long run goes on, a progress line (`[12/40] transcripts/05-cancel.http`) shows on
stderr, overwritten in place and erased before each report line (a carriage return and spaces: no
escape codes), only when stderr is a terminal, and not under `TERM=dumb` or in CI (`CI` set:
a CI log is no terminal, whatever a runner's pseudo-terminal says); `-q` keeps it, like
pytest's `-q` keeps its progress. `NO_COLOR` is about colour only (no-color.org), so it
leaves the progress line on.
`quiet` (`-q`) leaves out the files that passed.

The formatting functions are pure (values in, lines out); `TerminalReport` does the writing.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import click

from recorder.disk.atomic import write_text_atomic
from recorder.replay.plan import PlanItem
from recorder.replay.reports.recap import RECAP_LIMIT, gone_text, recap_entries, unsent
from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult, Trials
from recorder.replay.verdict.diff import Mismatch

__all__ = [
    "TerminalReport",
    "exchange_lines",
    "exit_status",
    "junit_error_xml",
    "junit_xml",
    "mismatch_line",
    "plural",
    "printable",
    "progress_wanted",
    "recap_lines",
    "summary_line",
    "transcript_lines",
    "write_junit_error",
    "write_junit_xml",
]

PASS_MARK = "✓"
FAIL_MARK = "✗"
UPDATE_MARK = "✎"
INDENT = "    "


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 exchange`, `2 exchanges`."""
    return f"{count} {noun}" if count == 1 else f"{count} {nouns or noun + 's'}"


def mismatch_line(mismatch: Mismatch, *, with_frame: bool = False) -> str:
    """`$.result.task.status.state: expected "X", got "Y"` (with `frame N: ` first if asked)."""
    text = mismatch.describe()
    if with_frame and mismatch.frame is not None:
        return f"frame {mismatch.frame}: {text}"
    return text


def exchange_header(result: ExchangeResult) -> tuple[str, bool]:
    """`exchange 1 (SendStreamingMessage), frame 3:` and whether the frame is in it."""
    title = f" ({printable(result.title)})" if result.title else ""
    frames = {m.frame for m in result.mismatches}
    if len(frames) == 1 and None not in frames:
        return f"exchange {result.number}{title}, frame {frames.pop()}:", True
    return f"exchange {result.number}{title}:", False


def trial_terms(trials: Trials) -> str:
    """` (needs 4)`; stopped early, ` of 10 (stopped early; needs 4)`; judged by a bound,
    ` (needs 9: a lower bound of 0.9 at 95% confidence; here 0.716)`."""
    early = f" of {trials.planned} (stopped early; " if trials.stopped_early else " ("
    if not trials.judged_by_bound:
        return f"{early}needs {trials.needed})"
    return (
        f"{early}needs {trials.needed}: a lower bound of {trials.required:g} at"
        f" {trials.confidence:.0%} confidence; here {trials.lower:.3f})"
    )


def trial_lines(result: ExchangeResult) -> tuple[str, list[str]]:
    """`--trials`: `exchange 2 (title): 2/5 trials passed (needs 4)` and the failed trials'
    mismatches and errors, each line with its trial number."""
    trials = result.trials
    assert trials is not None
    title = f" ({printable(result.title)})" if result.title else ""
    header = (
        f"exchange {result.number}{title}: {trials.passed}/{trials.runs} trials passed"
        f"{trial_terms(trials)}"
    )
    lines: list[str] = []
    for failure in trials.failures:
        lines.extend(
            INDENT + printable(f"trial {failure.trial}: {mismatch_line(m, with_frame=True)}")
            for m in failure.mismatches
        )
        if failure.error is not None:
            lines.append(INDENT + printable(f"trial {failure.trial}: error: {failure.error}"))
    lines.extend(INDENT + printable(f"note: {note}") for note in result.notes)
    return header, lines


def exchange_lines(result: ExchangeResult) -> tuple[str, list[str]]:
    """The header of a failed exchange and its indented lines: the mismatches, or the error;
    then the notes."""
    if result.trials is not None:
        return trial_lines(result)
    header, frame_in_header = exchange_header(result)
    lines = [
        INDENT + printable(mismatch_line(m, with_frame=not frame_in_header))
        for m in result.mismatches
    ]
    if result.error is not None:
        lines.append(INDENT + printable(f"error: {result.error}"))
    lines.extend(INDENT + printable(f"note: {note}") for note in result.notes)
    lines.extend((INDENT + printable(line)).rstrip() for line in result.details)
    return header, lines


def transcript_lines(
    result: TranscriptResult, *, width: int = 0, color: bool = False, update: bool = False
) -> list[str]:
    """The report lines of one transcript; `width` pads the path column."""
    path = printable(result.path).ljust(width)
    # --trials: an exchange that passed, but not in every trial, says how often
    flaky = [
        f"{' ' * len(path)}  {_style(PASS_MARK, 'green', color)} exchange {e.number}"
        f" {e.trials.passed}/{e.trials.runs} trials"
        + (f" (lower bound {e.trials.lower:.3f})" if e.trials.judged_by_bound else "")
        for e in result.exchanges
        if e.trials is not None and e.passed and e.trials.passed < e.trials.runs
    ]
    if result.passed:
        mark = _style(PASS_MARK, "green", color)
        return [f"{path}  {mark} {plural(len(result.exchanges), 'exchange')}", *flaky]
    if update and result.updated:
        mark = _style(f"{UPDATE_MARK} updated,", "yellow", color)
    else:
        mark = _style(FAIL_MARK, "red", color)
    entries: list[tuple[str, list[str]]] = []
    failed = result.failed
    played = [e for e in failed if e.played]
    entries.extend(exchange_lines(e) for e in played)
    not_played = [e for e in failed if not e.played]
    if not_played:
        # one line for the rest of the file, not one per exchange
        noun = "exchange" if len(not_played) == 1 else "exchanges"
        numbers = _number_ranges([e.number for e in not_played])
        entries.append((f"{noun} {numbers}: {not_played[0].error}", []))
    lines: list[str] = []
    for position, (header, details) in enumerate(entries):
        if position == 0:
            lines.append(f"{_style(path, None, color, bold=True)}  {mark} {header}")
        else:
            lines.append(f"{' ' * len(path)}  {mark} {header}")
        lines.extend(details)
    lines.extend(flaky)
    if update and result.not_updated:
        lines.append(INDENT + _style(f"not updated: {result.not_updated}", "yellow", color))
    return lines


def _number_ranges(numbers: Sequence[int]) -> str:
    """[3, 4, 5, 7] -> "3-5, 7"."""
    parts: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(parts)


def summary_line(result: PlayResult) -> str:
    """`10 transcripts, 37 exchanges: 36 passed, 1 failed` (errors and exchanges not played
    when there are any, and how many files were updated); `37 exchanges (12 calls)` when
    the agent's calls were stood in for."""
    calls = f" ({plural(result.call_count, 'call')})" if result.call_count else ""
    line = (
        f"{plural(len(result.transcripts), 'transcript')}, "
        f"{plural(result.exchange_count, 'exchange')}{calls}: "
        f"{result.passed_count} passed, {result.failed_count} failed"
    )
    if result.error_count:
        line += f", {plural(result.error_count, 'error')}"
    if result.not_played_count:
        line += f", {result.not_played_count} not played"
    if result.update:
        updated = sum(1 for t in result.transcripts if t.updated)
        line += f"; {plural(updated, 'transcript')} updated"
        if result.not_updated_count:
            line += f", {result.not_updated_count} not updated"
    return line


def recap_lines(result: PlayResult, *, limit: int = RECAP_LIMIT, color: bool = False) -> list[str]:
    """The closing recap above the summary line (`recorder.replay.reports.recap`): `failing
    exchanges:`, then one line per entry, at most `limit` of them and `… and N more`."""
    entries = recap_entries(result)
    if not entries:
        return []
    mark = _style(FAIL_MARK, "red", color)
    lines = ["failing exchanges:"]
    lines.extend(f"  {mark} {_one_line(entry)}" for entry in entries[:limit])
    if len(entries) > limit:
        lines.append(
            f"  … and {len(entries) - limit} more (all are in --junit-report, --json-report)"
        )
    return lines


def gone_line(results: Sequence[TranscriptResult], *, width: int = 0, color: bool = False) -> str:
    """The one report line of two or more files in a row the agent was gone for."""
    path = printable(results[0].path).ljust(width)
    mark = _style(FAIL_MARK, "red", color)
    return f"{_style(path, None, color, bold=True)}  {mark} {_one_line(gone_text(results))}"


def _one_line(text: str) -> str:
    return printable(text).replace("\n", " ")


# C0 and C1 controls (a title or value in a transcript could move the cursor or recolour the
# terminal): shown escaped
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with control characters written as `\\xNN` escapes (tab and line feed kept)."""
    if text.isprintable():
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def exit_status(result: PlayResult) -> int:
    """0 all match (or, with --update, every differing file rewritten), 1 mismatches (or a
    file --update had to leave), 2 an exchange that got no reply."""
    if result.error_count:
        return 2
    if result.update:
        return 1 if result.not_updated_count else 0
    return 0 if result.passed else 1


def progress_wanted(stream: TextIO) -> bool:
    """Whether a progress line may be drawn on `stream`: a terminal, not `TERM=dumb`, not in
    CI (see the module docstring)."""
    if os.environ.get("TERM") == "dumb" or os.environ.get("CI"):
        return False
    return _is_terminal(stream)


def _style(text: str, fg: str | None, color: bool, *, bold: bool = False) -> str:
    if not color:
        return text
    return click.style(text, fg=fg, bold=bold)


class TerminalReport:
    """Writes report lines as transcripts finish (a `recorder.replay.reports.results.Listener`); the
    progress line goes to `progress_stream` (stderr by default)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        color: bool | None = None,
        progress: bool | None = None,
        update: bool = False,
        progress_after: float = 1.0,
        quiet: bool = False,
        progress_stream: TextIO | None = None,
    ) -> None:
        self.stream = stream
        self.color = _isatty(stream) if color is None else color
        self.progress_stream = sys.stderr if progress_stream is None else progress_stream
        self.progress = progress_wanted(self.progress_stream) if progress is None else progress
        self.update = update
        self.quiet = quiet
        self.progress_after = progress_after
        self._lock = threading.Lock()
        self._width = 0
        self._total = 0
        self._done = 0
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._progress_shown = 0  # the length of the progress line on the screen
        # files none of whose exchanges was sent, for one reason (the agent gone, -x), not yet
        # shown: a run of them is one line
        self._gone: list[TranscriptResult] = []
        self.items: list[PlanItem] = []  # the plan, as `started` told it

    # Listener
    def started(self, items: Sequence[PlanItem]) -> None:
        with self._lock:
            self.items = list(items)
            self._width = max((len(item.path) for item in items), default=0)
            self._total = sum(item.selected_count for item in items)
            self._started = time.monotonic()

    def exchange_done(self, item: PlanItem, result: ExchangeResult) -> None:
        with self._lock:
            self._done += 1
            if not self.progress:
                return
            now = time.monotonic()
            if now - self._started < self.progress_after or now - self._last_draw < 0.1:
                return
            self._last_draw = now
            text = f"[{self._done}/{self._total}] {printable(item.path)}"
            self._clear_progress()
            self.progress_stream.write(text)
            self.progress_stream.flush()
            self._progress_shown = len(text)

    def transcript_done(self, result: TranscriptResult) -> None:
        with self._lock:
            reason = unsent(result)
            lines = [] if reason is not None and self._holds(reason) else self._flush_gone()
            if reason is not None:
                # held: the next files may not be sent either, and a run of them is one line
                self._gone.append(result)
            elif not (self.quiet and result.passed):
                lines += transcript_lines(
                    result, width=self._width, color=self.color, update=self.update
                )
            self._write(lines)

    def summary(self, result: PlayResult, notes: Sequence[str] = ()) -> None:
        """The recap, `notes` (what the model checks cost …), then the summary line."""
        line = summary_line(result)
        if self.color:
            colour = "green" if exit_status(result) == 0 else "red"
            line = click.style(line, fg=colour, bold=True)
        with self._lock:
            lines = self._flush_gone()
            # the recap above the summary line, as pytest's short summary: the last line of a
            # CI log stays the verdict
            self._write([*lines, *recap_lines(result, color=self.color), *notes, line])

    def _holds(self, reason: str) -> bool:
        """Whether a file not sent for `reason` joins the files held (nothing held, or the
        same reason)."""
        return not self._gone or unsent(self._gone[0]) == reason

    def _flush_gone(self) -> list[str]:
        gone, self._gone = self._gone, []
        if len(gone) == 1:
            return transcript_lines(gone[0], width=self._width, color=self.color)
        return [gone_line(gone, width=self._width, color=self.color)] if gone else []

    def _write(self, lines: list[str]) -> None:
        if not lines:
            return
        self._clear_progress()
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()

    def _clear_progress(self) -> None:
        if self._progress_shown:
            self.progress_stream.write("\r" + " " * self._progress_shown + "\r")
            self.progress_stream.flush()
            self._progress_shown = 0


def _isatty(stream: TextIO) -> bool:
    return _is_terminal(stream)


def _is_terminal(stream: TextIO) -> bool:
    # apart from `_isatty` (colour): a test that makes the report believe it colours a
    # terminal does not draw progress lines on its stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# --------------------------------------------------------------------------- JUnit XML


def junit_xml(result: PlayResult) -> str:
    """JUnit XML: one testsuite per transcript, one testcase per exchange.

    classname is the transcript file, name is `NN title`; a failure holds the mismatch lines,
    an error says why no reply came, and an exchange not played is skipped.
    """
    root = ET.Element(
        "testsuites",
        {
            "name": "recorder play",
            "tests": str(result.exchange_count),
            "failures": str(result.failed_count),
            "errors": str(result.error_count),
            "skipped": str(result.not_played_count),
            "time": _seconds(sum(e.seconds for t in result.transcripts for e in t.exchanges)),
        },
    )
    for transcript in result.transcripts:
        path = _xml_text(transcript.path)
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": path,
                "tests": str(len(transcript.exchanges)),
                "failures": str(sum(1 for e in transcript.exchanges if e.failed)),
                "errors": str(sum(1 for e in transcript.exchanges if e.error and e.played)),
                "skipped": str(sum(1 for e in transcript.exchanges if not e.played)),
                "time": _seconds(sum(e.seconds for e in transcript.exchanges)),
            },
        )
        for exchange in transcript.exchanges:
            attributes = {
                "classname": path,
                "name": _xml_text(f"{exchange.number:02d} {exchange.title}".rstrip()),
                "time": _seconds(exchange.seconds),
                "file": path,
            }
            if exchange.line is not None:
                attributes["line"] = str(exchange.line)
            case = ET.SubElement(suite, "testcase", attributes)
            if exchange.trials is not None:
                _trial_properties(case, exchange)
            if exchange.passed:
                continue
            header, details = exchange_lines(exchange)
            text = _xml_text("\n".join([f"{transcript.path}: {header}", *details]) + "\n")
            if not exchange.played:
                ET.SubElement(case, "skipped", {"message": _xml_text(exchange.error or "")})
            elif exchange.error is not None:
                error = ET.SubElement(
                    case,
                    "error",
                    {"type": exchange.error_type, "message": _xml_text(exchange.error)},
                )
                error.text = text
            else:
                if exchange.trials is not None:
                    count, first = header.rpartition(": ")[2], (details or [""])[0].strip()
                else:
                    count = plural(len(exchange.mismatches), "mismatch", "mismatches")
                    first = mismatch_line(exchange.mismatches[0], with_frame=True)
                failure = ET.SubElement(
                    case, "failure", {"type": "mismatch", "message": _xml_text(f"{count}: {first}")}
                )
                failure.text = text
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _trial_properties(case: ET.Element, exchange: ExchangeResult) -> None:
    """--trials: `<properties>` of a test case, the runs, the passes and the rate."""
    trials = exchange.trials
    assert trials is not None
    properties = ET.SubElement(case, "properties")
    for name, value in (
        ("trials", trials.runs),
        ("trials_planned", trials.planned or trials.runs),
        ("trials_passed", trials.passed),
        ("trials_needed", trials.needed),
        ("pass_rate", f"{trials.rate:.3f}"),
        ("required_pass_rate", f"{trials.required:g}"),
        ("pass_rate_lower_bound", f"{trials.lower:.3f}"),
        ("confidence", f"{trials.confidence:g}"),
        ("judged_by_bound", str(trials.judged_by_bound).lower()),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": str(value)})


def write_junit_xml(result: PlayResult, path: str | Path) -> None:
    write_text_atomic(Path(path), junit_xml(result))


def junit_error_xml(message: str) -> str:
    """JUnit XML for a run that stopped before any verdict (an agent that cannot be reached,
    a transcript that does not parse): one test case, `recorder play`, with the error."""
    root = ET.Element(
        "testsuites", {"name": "recorder play", "tests": "1", "failures": "0", "errors": "1"}
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        {"name": "recorder play", "tests": "1", "failures": "0", "errors": "1", "skipped": "0"},
    )
    case = ET.SubElement(suite, "testcase", {"classname": "recorder", "name": "recorder play"})
    first = message.splitlines()[0] if message else "error"
    error = ET.SubElement(case, "error", {"type": "error", "message": _xml_text(first)})
    error.text = _xml_text(message + "\n")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit_error(message: str, path: str | Path) -> None:
    write_text_atomic(Path(path), junit_error_xml(message))


# XML 1.0 §2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_NOT_XML_CHAR = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """`text` with the characters XML cannot hold written as `\\uXXXX`."""
    return _NOT_XML_CHAR.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _seconds(value: float) -> str:
    return f"{value:.3f}"
