"""Grouping by id lineage: which file an exchange of unscripted traffic belongs to.

Most clients know nothing of the recorder: no `Recorder-Scenario` header, random uuid message
ids, follow-up calls by the ids the agent handed out. Their exchanges are grouped so that every
file is self-contained (it creates what it later reads) and replays alone, in any order:

1. Every value an agent's reply generates (by the player's own rules, `recorder.rules.pairing`:
   a generated member such as a task `id` or `contextId`, or a generated shape such as a
   uuid), that no request of the run carried before its reply came (rule 2, for the whole
   run: the client's own values), has a *home*: the file of the exchange whose reply first
   carried it. A value a client chose is never the agent's, wherever it is echoed: a test
   suite that sends the same `messageId` in every test, echoed in the task history a later
   GetTask returns, ties no two tests together. Values of a loose kind (timestamps) have
   none: they name no conversation.
2. A request without a scenario that carries a value with a home joins that file, in request
   order; one that carries values of several files joins the one it names first. One that
   carries none starts a file of its own, named after its operation.
3. A request with a scenario goes to its scenario's file (a scenario wins); the values its
   replies generate get that file as their home too, so an unscripted follow-up joins it.
4. A reply that names values whose home is another file (a ListTasks, which carries no id
   and so starts a file of its own, listing the tasks earlier files created) moves no value;
   its file *needs* those files (`needs`), and so does the file of a request that carries
   values of files other than its own (`note_request`): the store writes
   `# @after NN-name.http` in its head, and the player plays them first
   (`recorder.replay.needs`).

Event-stream frames are learned one by one as they are relayed, so a follow-up sent while
the stream is still open (a CancelTask of an abandoned review) finds its file.

Pure: no I/O, no clock; the recording room calls it. Keys are the store's file keys.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import orjson

from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.format.model import Request, canonical_json_body, is_json_media_type
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES, Rules

__all__ = ["MAX_SCANNED_BODY", "Lineage"]

# reply bodies larger than this are not parsed to learn their values (bytes): a 100 MB reply
# is no conversation's first exchange, and parsing it would double the recorder's memory
MAX_SCANNED_BODY = 8 * 1024 * 1024
# the longest value of a request kept as the client's for the rest of the run (characters):
# ids are far shorter, and a diff's whole text kept for every request would grow without end
_LONGEST_KEPT = 1024


class Lineage:
    """The homes of generated values, and the file each unscripted request belongs to."""

    def __init__(self, rules: Rules = DEFAULT_RULES) -> None:
        self._pairing = PairingRules(rules)
        self._loose = rules.loose_kinds
        self._home: dict[str, Hashable] = {}
        # every value (up to _LONGEST_KEPT characters) any request of the run carried: the
        # client's, never given a home (a value homed before stays homed)
        self._carried: set[str] = set()
        self._needs: dict[Hashable, set[Hashable]] = {}  # file -> the files it reads state of

    def __len__(self) -> int:
        return len(self._home)

    def request_values(self, request: Request) -> frozenset[str]:
        """Every value the request carries (its body's strings, path segments, query and
        header values, and the shapes inside them): rule 2 of `recorder.rules.pairing`. They are
        the client's for the rest of the run: no later reply gives them a home."""
        return self._carry(self._pairing.request_values(request))

    def values_of(
        self, target: str, headers: list[tuple[str, str]], body: bytes, content_type: str | None
    ) -> frozenset[str]:
        """`request_values` of the request as the recorder models it
        (`recorder.format.model.Request` with these parts), without building the model: a JSON body
        is put in its canonical form only when that can change a string in it (escapes, non-ASCII,
        DEL); otherwise only the layout between the strings differs, which no value depends on. Like
        `request_values`, they are the client's for the rest of the run."""
        is_json = is_json_media_type(content_type)
        if is_json and body and not (body.isascii() and b"\\" not in body and b"\x7f" not in body):
            body = canonical_json_body(body)
        return self._carry(self._pairing.values_of(target, headers, body, is_json))

    def _carry(self, values: frozenset[str]) -> frozenset[str]:
        """`values` (of a request) kept as the run's client values; returned as they are."""
        carried = self._carried
        carried.update([value for value in values if len(value) <= _LONGEST_KEPT])
        return values

    def home_of(self, values: Iterable[str]) -> Hashable | None:
        """The file a request carrying `values` joins: the home of the first value that has
        one, in the request's order of values (sorted, so that the choice is stable)."""
        home = self._home
        if not home:
            return None
        for value in sorted(values):
            found = home.get(value)
            if found is not None:
                return found
        return None

    def learn(self, value: Any, key: Hashable, client: frozenset[str]) -> None:
        """Give every generated value of the parsed JSON `value` (a reply body or a stream
        frame's data) that the client did not send itself (`client`: this exchange's request
        values; or any request of the run, `request_values`) the home `key`, unless it has one."""
        self.learn_generated(self.generated(value), key, client)

    def generated(self, value: Any) -> list[tuple[str, str]]:
        """The generated values (text, kind) of the parsed JSON `value`, for `learn_generated`:
        reads the rules only, so any thread may find them (a large gRPC message's, off the
        event loop) while the homes are learned where the requests are routed."""
        return self._pairing.generated_values(value)

    def learn_generated(
        self, generated: Iterable[tuple[str, str]], key: Hashable, client: frozenset[str]
    ) -> None:
        """`learn` of the values `generated` found."""
        home = self._home
        loose = self._loose
        carried = self._carried
        for text, kind in generated:
            found = home.get(text)
            if found is not None:
                if found != key and key is not None:
                    # a reply naming another file's value reads its state (a ListTasks
                    # listing the tasks other files created): this file needs that one
                    self._needs.setdefault(key, set()).add(found)
                continue
            if kind in loose or text in client or text in carried:
                continue
            home[text] = key

    def note_request(self, values: Iterable[str], key: Hashable) -> None:
        """A request carrying `values` went to file `key`: the other files whose values it
        carries (it joined one, or its scenario's) are needs of `key`, as a reply's are: the
        player gives it their live values (a task of another file named blind)."""
        home = self._home
        if not home or key is None:
            return
        for value in values:
            found = home.get(value)
            if found is not None and found != key:
                self._needs.setdefault(key, set()).add(found)

    def needs(self, key: Hashable) -> frozenset[Hashable]:
        """The files whose generated values the replies of file `key` named so far (rule 4
        of the module docstring): what its `# @after` tags name."""
        found = self._needs.get(key)
        return frozenset(found) if found else frozenset()

    def learn_body(self, body: bytes, key: Hashable, client: frozenset[str]) -> Any:
        """`learn` from a JSON text (a reply body, a frame's data); anything else is skipped.
        Returns the value as `orjson.loads(body)` reads it (None when it was not read so), for
        the recording writer, which would read it again (`Builder.built`)."""
        if not body or len(body) > MAX_SCANNED_BODY or body.lstrip()[:1] not in (b"{", b"["):
            return None
        try:
            value = read = orjson.loads(body)
        except orjson.JSONDecodeError:  # (NaN, a huge integer: `json_value` reads those)
            value, read = json_value(body, exact_numbers=False), None
        if value is not NOT_JSON:
            self.learn(value, key, client)  # (its strings are what it learns)
        return read
