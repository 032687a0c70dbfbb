"""State other files made, left out of a listing: the live reply of a file that reads the
state of the files it needs (`# @after`, `recorder.replay.needs`) may list more than they made.

A ListTasks with no filter lists every task the agent holds: the recording listed those its
needed files had created; live, the agent also holds what other files of the run made (in
another worker, earlier in the run, or in an earlier run against the same agent). Pure, on
the parsed bodies:

1. A listing is an array of objects at a member named in `LISTING_MEMBERS` (`tasks`: A2A's
   ListTasksResponse) where the recorded and the live reply both hold one, at the same
   place (`$.result.tasks`); no other array is touched (a task's `history` or `artifacts`
   that grew is a change, never state of another file).
2. A live item of a listing is *unknown* when it names strict generated values (an `id`, a
   `contextId`: rule 1 of `recorder.rules.pairing`, neither loose nor a client value) and none of
   them is paired (the file's own replies and its needs' gave no such live value). When the
   live listing is longer than the recorded one, unknown items are left out, the last ones
   first, until it is as long or none is left: the items of the file's state all stay, so a
   task of a needed file that is missing, or one too many of its own, still fails.
3. A count beside such an array (`totalSize`) is lowered by the items left out of it.

Only files that inherited a state (`ReplayState.inherit`) are filtered; a file that needs
none compares its listings whole.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.format.model import Response
from recorder.replay.verdict.live import LiveReply
from recorder.rules.pairing import AliasMap, PairingRules

__all__ = ["COUNT_MEMBERS", "LISTING_MEMBERS", "Others"]

LISTING_MEMBERS = frozenset({"tasks"})
"""Members that hold a listing of the agent's state (A2A ListTasksResponse)."""
COUNT_MEMBERS = frozenset({"totalSize"})
"""Members that count the items of a listing beside them (A2A ListTasksResponse)."""


class Others:
    """Leaves another file's items out of a live reply (see the module docstring)."""

    def __init__(self, pairing: PairingRules, aliases: AliasMap) -> None:
        self._pairing = pairing
        self._aliases = aliases

    def leave_out(self, recorded: Response, live: Response | LiveReply) -> Response | LiveReply:
        """`live`, without the items of other files' state; `live` itself when there are none
        (or its body is no JSON object, or a stream)."""
        if recorded.events is not None or not recorded.is_json or not live.body:
            return live
        expected = recorded.json
        if not isinstance(expected, dict) or live.body.lstrip()[:1] != b"{":
            return live
        value = json_value(live.body.decode("utf-8", "replace"))
        if value is NOT_JSON or not isinstance(value, dict):
            return live
        kept, dropped = self._walk(expected, value)
        if not dropped:
            return live
        body = json.dumps(kept, ensure_ascii=False).encode("utf-8")
        if isinstance(live, Response):
            return dataclasses.replace(live, body=body)
        return LiveReply(
            live.status,
            live.reason,
            live.headers,
            body,
            live.http_version,
            cut=live.cut,
            trailers=live.trailers,
        )

    def _walk(self, recorded: Any, live: Any) -> tuple[Any, int]:
        """(`live` with other files' items left out, how many were), beside `recorded`."""
        if isinstance(recorded, dict) and isinstance(live, dict):
            out: dict[str, Any] = {}
            dropped = 0
            listed = 0  # left out of the arrays that are members of this object
            for name, member in live.items():
                if name in recorded:
                    if name in LISTING_MEMBERS and isinstance(member, list):
                        kept, count = self._listing(recorded[name], member)
                        listed += count
                    else:
                        kept, count = self._walk(recorded[name], member)
                    dropped += count
                    member = kept
                out[name] = member
            if listed:
                for name in COUNT_MEMBERS & out.keys():
                    count_value = out[name]
                    if isinstance(count_value, int) and not isinstance(count_value, bool):
                        out[name] = max(0, count_value - listed)
            return out, dropped
        return live, 0

    def _listing(self, recorded: Any, live: list[Any]) -> tuple[list[Any], int]:
        """(the live listing without the unknown items past the recorded length, how many)."""
        if not isinstance(recorded, list) or len(live) <= len(recorded):
            return live, 0
        if not all(isinstance(item, dict) for item in recorded):
            return live, 0
        excess = len(live) - len(recorded)
        unknown = [index for index, item in enumerate(live) if self._unknown(item)]
        left_out = set(unknown[len(unknown) - min(excess, len(unknown)) :])
        return [item for index, item in enumerate(live) if index not in left_out], len(left_out)

    def _unknown(self, item: Any) -> bool:
        """Whether a live item names strict generated values, none of them paired."""
        if not isinstance(item, dict):
            return False
        loose = self._pairing.loose
        client = self._aliases.client
        paired = self._aliases.live_to_golden
        strict = [
            value
            for value, kind in self._pairing.generated_values(item)
            if kind not in loose and value not in client
        ]
        return bool(strict) and not any(value in paired for value in strict)
