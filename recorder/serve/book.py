"""Which recorded exchange answers a live request: conversations and their branches (pure).

The strategy (docs/serve.md says it for users):

1. **A request that carries an id the stand-in handed out** (a task id, a contextId, a
   push-config id from an earlier reply, as `recorder.rules.pairing` calls values generated) belongs
   to the conversation that was handed that id. It is answered by the unused exchange of that
   conversation's transcript whose request matches best (`Matching.score`; among equals the
   first, the recorded order): exchanges are used once each, so the same GetTask gets its
   recorded answers in order (in progress before the cancel, canceled after).
2. **A request that carries none** but a client's own id paired before (its contextId, a
   uuid it made up: `echoed`) goes on in the latest such conversation that has an answer.
3. **Otherwise it starts a new conversation.** Its candidates are the exchanges, in every
   transcript, whose recorded request matches and carries no id an earlier reply handed out
   (those `recorder.serve.index` files with what the request shares: no other is scored);
   the best of each transcript. The best of all answers; among equals, the transcript the
   fewest conversations have opened (the same request sent three times opens three
   transcripts, in order), then file order.
4. A conversation may have several **branches**: when the first request matches in several
   transcripts (the same SendMessage opens four of the goldens), every one is kept, and the
   best answers. Each later request keeps only the branches where it matches; the others'
   recorded ids are paired with the ids actually handed out, value by value, so whichever
   branch answers next speaks of the same task. A branch whose reply does not pair is dropped.
5. **Ids handed out** are the recorded ones, unless another conversation holds that value
   already (two clients running the same scenario at once) or `fresh` is set: then a new one
   of the same shape (a uuid4 for a uuid). Loose kinds (timestamps) are always as recorded.
6. **A file that needs others** (`# @after 03-send-message.http`: a ListTasks that lists the
   tasks file 03 created) is answered within a conversation that played a file it needs: its
   branch joins that conversation (a group of its own: the conversation's other branches go
   on), its recorded ids are paired as the needed files' branches paired them (the tasks it
   lists are the ones the conversation was handed), and so are the client's values. Which
   conversation: the one a handed-out id or the client's own id names, as in 1 and 2; for a
   request that carries neither, the conversation that matches best, among equals the one that
   played a needed file most recently (a `Tie` names the others). With none, the file starts
   a conversation of its own, as any other.

A choice between candidates that score alike (or within one leaf) is a `Tie` in `ties`, for
the app to log: never a silent arbitrary choice.

7. **Identical transcripts** (a recording that holds one file many times over: suites copied
   whole) answer every request alike, so one branch stands for all of them (`Branch.twins`)
   and a request is compared with one: its cost does not grow with the copies. Which copy
   answers is as if each were its own branch: the one opened by the fewest conversations,
   then file order; a tie with copies is one `Tie` that counts them. (A file that needs
   others, or that others need, is never one of such copies: it is paired with them.)

Every conversation and every id handed out stays in memory while the stand-in runs.
"""

from __future__ import annotations

import bisect
import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from recorder.format.model import Exchange
from recorder.rules.pairing import PairingRules
from recorder.serve.index import StepIndex
from recorder.serve.match import LiveRequest, Matching, random_template
from recorder.serve.steps import Key, Step
from recorder.serve.webhooks import without_urls

__all__ = ["Book", "Branch", "Conversation", "Found", "NotFound", "Score", "Tie"]

Score = tuple[int, int, int, int]
"""`Matching.score`: higher is closer."""


_ANSWERED = "answered already: each recorded exchange answers once per conversation"


@dataclass
class Branch:
    """One transcript a conversation may be playing, with its pairings."""

    file: int
    used: set[int] = field(default_factory=set)
    to_live: dict[str, str] = field(default_factory=dict)
    """recorded generated value -> the value handed out."""
    echo: dict[str, str] = field(default_factory=dict)
    """recorded client value -> the client's live value."""
    group: int = 0
    """Branches of one group are alternatives (a later request keeps those where it matches);
    a file that joined the conversation (`@after`) is a group of its own."""
    last: int = 0
    """When the branch last answered (the book's count of answers)."""
    twins: list[int] = field(default_factory=list)
    """Files identical to `file` (`Book` rule 7) played with it: every request answers each
    as it answers `file`, so they share this branch's state; `file` answers."""


@dataclass
class Conversation:
    number: int
    branches: list[Branch]


@dataclass
class Found:
    """The answer: `step` of `branch` in `conversation`, with the client's JSON-RPC id."""

    conversation: Conversation
    branch: Branch
    step: Step
    rpc_id: Any


@dataclass
class NotFound:
    """No recorded request matches: the closest one and what differs (empty: none at all)."""

    closest: Step | None
    differences: list[str]


@dataclass
class _Candidate:
    branch: Branch
    step: Step
    echoes: dict[str, str]
    score: Score


@dataclass(frozen=True)
class Tie:
    """Two recorded exchanges that matched a request (near) equally: `chosen` answered."""

    chosen: Step
    other: Step
    same_reply: bool
    """Whether their recorded replies are alike but for what the conversation makes its own
    (`Step.reply_key`: generated values, the request's own JSON-RPC id): a harmless tie."""
    conversations: tuple[int, int] | None = None
    """(the conversation that answered, another that played the needed file as well): two
    conversations a file that needs others could have joined (`chosen` is `other`)."""
    copies: int = 0
    """How many more files identical to `other`'s matched as well (`Book` rule 7): this
    tie stands for theirs too."""


class Book:
    """The served transcripts' steps and the live conversations (not thread-safe: the ASGI
    app calls it from its one event loop)."""

    def __init__(
        self,
        files: list[list[Step]],
        rules: PairingRules,
        *,
        fresh: bool = False,
        new_id: Callable[[str, str], str] | None = None,
        after: Sequence[tuple[int, ...]] | None = None,
    ) -> None:
        self.files = files
        self.rules = rules
        self.fresh = fresh
        self.new_id = new_id or _new_id
        self.owner: dict[str, Conversation] = {}
        """Every value handed out -> the conversation it was handed to."""
        self.echoed: dict[str, list[Conversation]] = {}
        """A client's own id (uuid, random part) -> the conversations it was paired in."""
        self.opened = [0] * len(files)
        """How many conversations each transcript has answered the first request of."""
        self.ties: list[Tie] = []
        """The ties of the last `find` (the app logs them)."""
        self._numbers = itertools.count(1)
        self._groups = itertools.count(1)
        self._clock = itertools.count(1)
        self._keyed: list[dict[Key, list[Step]]] = []
        """Each file's steps by `Step.key` (in order): a request looks at its key's only."""
        for steps in files:
            keyed: dict[Key, list[Step]] = {}
            for step in steps:
                keyed.setdefault(step.key, []).append(step)
            self._keyed.append(keyed)
        self.after: list[tuple[int, ...]] = list(after) if after is not None else []
        """Each file's needs (`recorder.serve.steps.needed_files`), file numbers."""
        self.after += [()] * (len(files) - len(self.after))
        self._needed_by: dict[int, list[int]] = {}
        for number, needs in enumerate(self.after):
            for needed in needs:
                self._needed_by.setdefault(needed, []).append(number)
        self._first_copy = _first_copies(files, self.after, self._needed_by)
        """Each file's first identical file in file order (itself: the first or alone)."""
        self._copies: dict[int, list[int]] = {}
        """A first copy -> its copies, itself among them, in the order they open a
        conversation: the fewest opened first, then file order (`opened`)."""
        for number, first in enumerate(self._first_copy):
            self._copies.setdefault(first, []).append(number)
        self._starters = StepIndex(
            (
                step
                for number, steps in enumerate(files)
                if self._first_copy[number] == number
                for step in steps
                if not step.needs
            ),
            rules,
        )
        """The steps that can start a conversation (they need no earlier id), indexed: the
        first copy's of identical files."""
        self._joining_keys = {
            step.key for number, needs in enumerate(self.after) if needs for step in files[number]
        }
        self.playing: dict[int, dict[int, Conversation]] = {}
        """A needed file -> the conversations (by number) that have had a branch of it."""

    # ------------------------------------------------------------------ matching

    def _try(
        self, branch: Branch, step: Step, live: LiveRequest, *, first_only: bool = True
    ) -> _Candidate | Matching:
        matching = Matching(
            self.rules,
            step.needs,
            branch.to_live,
            branch.echo,
            templates=step.templates,
            first_only=first_only,
        )
        canon, legacy = step.spelled
        if legacy == live.legacy or step.unknown_method:
            # (an agent that did not know the recorded spelling's method, -32601, does not
            # take the two spellings alike: compared as they are)
            recorded, live_json = step.json, live.json
        else:
            # one spelled as A2A 0.3, the other as 1.0: compared as 1.0, and ranked below
            # any recording in the client's own spelling
            recorded, live_json = canon, live.canon
            matching.respelled = True
        unhooked = step.unhooked[1 if matching.respelled else 0]
        if unhooked is not None:
            # a push config's url is the client's webhook, its own: not matched
            recorded, live_json = unhooked, without_urls(live_json, step.exchange.request)
        differences = matching.compare(
            step.exchange.request.method,
            step.pieces,
            step.significant,
            recorded,
            step.body,
            live,
            live_json,
        )
        if differences:
            return matching
        return _Candidate(branch, step, matching.echoes, matching.score)

    def _best(
        self,
        branch: Branch,
        steps: list[Step],
        live: LiveRequest,
        alike: dict[Any, _Candidate | Matching] | None = None,
    ) -> _Candidate | None:
        """The unused step of `branch` among `steps` that matches `live` best (the earliest of
        equals: the conversation's own order). `alike`: for a new branch, the outcomes of
        the recorded requests compared so far (`Step.request_identity`): one recorded in
        several files is compared once."""
        key = live.key
        best: _Candidate | None = None
        for step in steps:
            if step.key != key or step.index in branch.used or step.exchange.sent_by_agent:
                continue  # (a push delivery, a call: the agent's, `recorder.serve.deliveries`)
            if alike is None:
                outcome = self._try(branch, step, live)
            else:
                outcome = alike.get(step.request_identity) or self._try(branch, step, live)
                alike[step.request_identity] = outcome
                if isinstance(outcome, _Candidate) and outcome.step is not step:
                    outcome = _Candidate(branch, step, outcome.echoes, outcome.score)
            if isinstance(outcome, _Candidate) and (best is None or outcome.score > best.score):
                best = outcome
        return best

    def find(self, live: LiveRequest) -> Found | NotFound:
        """The recorded exchange that answers `live` (and the ids its reply hands out are
        chosen), or the closest recorded request and what differs."""
        self.ties = []
        owners: list[Conversation] = []
        echoed: list[Conversation] = []
        for value in live.strings():
            owner = self.owner.get(value)
            if owner is not None:
                if owner not in owners:
                    owners.append(owner)
            else:
                echoed.extend(c for c in self.echoed.get(value, ()) if c not in echoed)
        if owners:
            owners.sort(key=lambda c: c.number)
            return self._go_on(owners, live) or self._closest_of(owners, live)
        if echoed:
            # a client's own id (its contextId) names the conversations it was sent in: the
            # latest that has an answer goes on; none: the request starts a conversation
            echoed.sort(key=lambda c: c.number, reverse=True)
            found = self._go_on(echoed, live)
            if found is not None:
                return found
        return self._start(live)

    def _go_on(self, owners: list[Conversation], live: LiveRequest) -> Found | None:
        for conversation in owners:
            chosen: list[_Candidate] = []
            for branch in conversation.branches:
                best = self._best(branch, self._keyed[branch.file].get(live.key, []), live)
                if best is not None:
                    chosen.append(best)
            chosen.extend(self._joins(conversation, live))
            if chosen:
                # the best score answers; among equals, the conversation's first branch
                chosen.sort(key=lambda c: _negated(c.score))
                return self._answer(conversation, chosen, live)
        return None

    def _closest_of(self, owners: list[Conversation], live: LiveRequest) -> NotFound:
        # the closest exchange of the conversations' transcripts, all differences named
        closest: tuple[_Rank, Step, list[str]] | None = None
        for conversation in owners:
            for branch in conversation.branches:
                for step in self.files[branch.file]:
                    outcome = self._try(branch, step, live, first_only=False)
                    if isinstance(outcome, _Candidate):
                        differences = [_ANSWERED]  # it matches, but it was used
                        rank = _rank(step, live, differences, outcome.score)
                    else:
                        differences = outcome.differences
                        rank = _rank(step, live, differences, outcome.score)
                    if closest is None or rank < closest[0]:
                        closest = (rank, step, differences)
        if closest is None:
            return self.closest(live)
        return NotFound(closest[1], closest[2])

    def _joins(self, conversation: Conversation, live: LiveRequest) -> list[_Candidate]:
        """The best step of each file that needs one the conversation plays and is not among
        its branches yet, on a branch (one new group) paired as the needed files' were."""
        if live.key not in self._joining_keys:
            return []
        files = {branch.file for branch in conversation.branches}
        joining = sorted({f for file in files for f in self._needed_by.get(file, ())} - files)
        found: list[_Candidate] = []
        group = 0
        for number in joining:
            needed = [b for b in conversation.branches if b.file in self.after[number]]
            if not needed:
                continue
            group = group or next(self._groups)
            branch = Branch(number, group=group)
            for other in reversed(needed):  # (the first branch's pairs win)
                branch.to_live.update(other.to_live)
                branch.echo.update(other.echo)
            best = self._best(branch, self._keyed[number].get(live.key, []), live)
            if best is not None:
                found.append(best)
        return found

    def _join_anywhere(self, live: LiveRequest) -> tuple[Conversation, list[_Candidate]] | None:
        """For a request that names no conversation: the conversation that played a file a
        matching file needs, and the candidates of its joining files; the best score wins,
        among equals the conversation that played a needed file last (a `Tie` per other)."""
        if live.key not in self._joining_keys:
            return None
        options: list[tuple[Score, int, Conversation, list[_Candidate]]] = []
        seen: set[int] = set()
        for needed in self._needed_by:
            for conversation in self.playing.get(needed, {}).values():
                if conversation.number in seen:
                    continue
                seen.add(conversation.number)
                joins = self._joins(conversation, live)
                if joins:
                    joins.sort(key=lambda c: _negated(c.score))
                    needs = self.after[joins[0].step.file]
                    last = max(b.last for b in conversation.branches if b.file in needs)
                    options.append((joins[0].score, last, conversation, joins))
        if not options:
            return None
        options.sort(key=lambda o: (_negated(o[0]), -o[1]))
        score, _, conversation, joins = options[0]
        for other in options[1:]:
            if other[0] != score:
                break
            step = joins[0].step
            self.ties.append(
                Tie(step, step, True, conversations=(conversation.number, other[2].number))
            )
        return conversation, joins

    def _start(self, live: LiveRequest) -> Found | NotFound:
        chosen: list[_Candidate] = []
        by_file: dict[int, list[Step]] = {}  # (in file order: the candidates are)
        for step in self._starters.candidates(live):
            by_file.setdefault(step.file, []).append(step)
        alike: dict[Any, _Candidate | Matching] = {}  # (a new branch: its request alone counts)
        for first, starters in by_file.items():
            copies = self._copies[first]
            file = copies[0]  # (of identical files, the one that would answer first)
            if file != first:
                steps = self.files[file]
                starters = [steps[step.index] for step in starters]
            best = self._best(Branch(file), starters, live, alike)
            if best is not None:
                best.branch.twins = copies[1:]
                chosen.append(best)
        joined = self._join_anywhere(live)
        if joined is not None:
            conversation, joins = joined
            if not chosen or joins[0].score >= max(c.score for c in chosen):
                # the state the client made in that conversation is what this file reads
                return self._answer(conversation, joins, live)
            self.ties = []
        if chosen:
            # the best score answers; among equals, the transcript opened by the fewest
            # conversations (repeated identical requests each get their own), then file order
            chosen.sort(key=lambda c: (_negated(c.score), self.opened[c.step.file], c.step.file))
            self._open(chosen[0].step.file)
            conversation = Conversation(next(self._numbers), [c.branch for c in chosen])
            return self._answer(conversation, chosen, live)
        return self.closest(live)

    def closest(self, live: LiveRequest) -> NotFound:
        """The recorded request nearest `live`: same method, path and JSON-RPC method first,
        then the fewest differences, then the best score of what did match."""
        best: tuple[_Rank, Step, list[str]] | None = None
        for number, steps in enumerate(self.files):
            if self._first_copy[number] != number:
                continue  # (a later copy ranks as its first: never closer)
            for step in steps:
                outcome = self._try(Branch(step.file), step, live, first_only=False)
                if isinstance(outcome, _Candidate):
                    differences: list[str] = []
                    score = outcome.score
                else:
                    differences, score = outcome.differences, outcome.score
                rank = _rank(step, live, differences, score)
                if best is None or rank < best[0]:
                    best = (rank, step, differences)
        if best is None:
            return NotFound(None, ["no transcript is served"])
        return NotFound(best[1], best[2])

    # ------------------------------------------------------------------ answering

    def _note_echoes(self, conversation: Conversation, echoes: dict[str, str]) -> None:
        """The client's own ids (uuids, values with a random part) name `conversation`."""
        for live in echoes.values():
            if self.rules.shape_kind(live) is not None or random_template(live) is not None:
                conversations = self.echoed.setdefault(live, [])
                if conversation not in conversations:
                    conversations.append(conversation)

    def _open(self, file: int) -> None:
        """`file` answered the first request of a conversation: it goes after its identical
        copies opened as often (it was the first of the fewest opened)."""
        self.opened[file] += 1
        copies = self._copies[self._first_copy[file]]
        if len(copies) > 1:
            copies.remove(file)
            opened = self.opened
            bisect.insort(copies, file, key=lambda number: (opened[number], number))

    def release(self, found: Found) -> None:
        """`found`'s exchange answers again in its branch: the reply the client got was
        spoiled on purpose (`--faults`), so its retry is to get it. The ids it handed out
        stay handed out (the retry's reply carries the same)."""
        found.branch.used.discard(found.step.index)

    def _note_ties(self, chosen: list[_Candidate]) -> None:
        first = chosen[0]
        twins = first.branch.twins
        if twins:
            # (its identical copies: one tie for all)
            twin = self.files[twins[0]][first.step.index]
            self.ties.append(Tie(first.step, twin, True, copies=len(twins) - 1))
        for other in chosen[1:]:
            if not _near(first.score, other.score):
                break
            if other.step is not first.step:
                same = self._reply_key(first.step) == self._reply_key(other.step)
                self.ties.append(Tie(first.step, other.step, same, copies=len(other.branch.twins)))

    def _reply_key(self, step: Step) -> str:
        """`Step.reply_key`, made once for identical files (their first copy's)."""
        return self.files[self._first_copy[step.file]][step.index].reply_key

    def _answer(
        self, conversation: Conversation, chosen: list[_Candidate], live: LiveRequest
    ) -> Found:
        self._note_ties(chosen)
        first = chosen[0]
        branch, step = first.branch, first.step
        branch.used.add(step.index)
        branch.last = next(self._clock)
        branch.echo.update(first.echoes)
        self._note_echoes(conversation, first.echoes)
        handed: list[str] = []
        for value, kind in step.hands_out:
            given = branch.to_live.get(value)
            if given is None:
                taken = self.owner.get(value)
                if self.fresh or (taken is not None and taken is not conversation):
                    given = self.new_id(value, kind)
                else:
                    given = value
                branch.to_live[value] = given
            handed.append(given)
            self.owner.setdefault(given, conversation)
        kept = [branch]
        for other in chosen[1:]:
            if other.branch.group != branch.group:
                continue  # (another group goes on as it was)
            if _pair(other.step.hands_out, handed, other.branch.to_live):
                other.branch.used.add(other.step.index)
                other.branch.last = branch.last
                other.branch.echo.update(other.echoes)
                kept.append(other.branch)
        conversation.branches = _regroup(conversation.branches, kept)
        for one in kept:
            if one.file in self._needed_by:
                self.playing.setdefault(one.file, {})[conversation.number] = conversation
        return Found(conversation, branch, step, live.rpc_id)


def _first_copies(
    files: list[list[Step]], after: list[tuple[int, ...]], needed_by: dict[int, list[int]]
) -> list[int]:
    """Each file's first identical file, in file order (itself when none is before it):
    the same exchanges (`Exchange` equality: all but where they were read). A file that
    needs others or that others need is its own (its values are paired with theirs)."""
    firsts: dict[tuple[Exchange, ...], int] = {}
    out: list[int] = []
    for number, steps in enumerate(files):
        if after[number] or number in needed_by:
            out.append(number)
            continue
        exchanges = tuple(step.exchange for step in steps)
        out.append(firsts.setdefault(exchanges, number))
    return out


def _regroup(branches: list[Branch], kept: list[Branch]) -> list[Branch]:
    """`branches` with those of `kept`'s group replaced by `kept` (where the group was, or
    at the end: a file that joined)."""
    group = kept[0].group
    out: list[Branch] = []
    placed = False
    for branch in branches:
        if branch.group != group:
            out.append(branch)
        elif not placed:
            out.extend(kept)
            placed = True
    if not placed:
        out.extend(kept)
    return out


def _pair(recorded: list[tuple[str, str]], handed: list[str], to_live: dict[str, str]) -> bool:
    """Pair another branch's recorded values with the values handed out, in order; False when
    they do not pair one to one (the branch is dropped)."""
    if len(recorded) != len(handed):
        return False
    pairs = dict(to_live)
    for (value, _), given in zip(recorded, handed, strict=True):
        if pairs.setdefault(value, given) != given:
            return False
    to_live.update(pairs)
    return True


_Rank = tuple[int, int, Score]


def _rank(step: Step, live: LiveRequest, differences: list[str], score: Score) -> _Rank:
    """Smaller is closer: the same method, path and JSON-RPC method, then the fewest
    differences, then the match's own score (more exact leaves)."""
    request = step.exchange.request
    same = (
        request.method == live.method
        and request.path == live.target.partition("?")[0]
        and step.rpc_method == live.rpc_method
    )
    shape = (
        request.method == live.method
        and len(step.pieces) == len(live.pieces)
        and step.rpc_method == live.rpc_method
    )
    return (0 if same else 1 if shape else 2, len(differences), _negated(score))


def _negated(score: Score) -> Score:
    return (-score[0], -score[1], -score[2], -score[3])


def _near(best: Score, other: Score) -> bool:
    """Whether `other` scores as `best` does, or within one leaf: a choice worth a log line."""
    same = best[:2] == other[:2]
    return same and abs(best[2] - other[2]) + abs(best[3] - other[3]) <= 1


def _new_id(value: str, kind: str) -> str:
    """A fresh value of the same shape as `value`: a uuid4 for a uuid, else `value` with a
    short random suffix."""
    if len(value) == 36 and value.count("-") == 4:
        fresh = str(uuid.uuid4())
        return fresh.upper() if value.isupper() else fresh
    return f"{value}-{uuid.uuid4().hex[:8]}"
