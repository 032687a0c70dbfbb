"""The code-reviewer's AgentExecutor: turns the pure decisions of `review.py` into A2A events.

Event order is fixed, so replies never depend on timing:

- a question -> one agent Message (no task);
- a diff -> Task (SUBMITTED), statusUpdate WORKING, artifactUpdate `review`, statusUpdate
  COMPLETED;
- a diff without a file name -> Task (SUBMITTED), WORKING, INPUT_REQUIRED (with an agent
  message asking for the file name); the follow-up on the same task -> WORKING, artifact,
  COMPLETED;
- a slow review -> Task (SUBMITTED), WORKING (with a message saying it waits), then nothing
  until CancelTask (-> CANCELED) or `slow_review_seconds` pass (-> artifact, COMPLETED).

With a `wording` (`recorder kit --vary`), the answers to questions, the review and the
question for a file name are worded anew on each reply (`recorder.kit.wording`); the events,
ids and states are the same. Without one, every text is the fixed text of `review.py`. With a
`model` (`recorder kit --model URL`), the review is worded by a model, its findings perhaps
asked of an MCP tool (`recorder.kit.model`); the same events, the artifact the model's words
(or, when the model or the tool fails, FAILED with the reason in the agent's message).
"""

from __future__ import annotations

import asyncio
import dataclasses

from a2a.helpers import get_message_text, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Role, Task, TaskState, TaskStatus

from recorder.kit import review
from recorder.kit.model import ModelError, ModelWording
from recorder.kit.wording import Wording

__all__ = ["SLOW_REVIEW_SECONDS", "CodeReviewerExecutor"]

SLOW_REVIEW_SECONDS = 30.0

_ASK_FILE_NAME = (
    "This diff has no file name header (no '--- a/...' / '+++ b/...' lines). "
    "Which file is it for? Reply with its path, e.g. src/app.py."
)


class CodeReviewerExecutor(AgentExecutor):
    """Answers questions with a message and reviews diffs as tasks (see the module docstring)."""

    def __init__(
        self,
        *,
        slow_review_seconds: float = SLOW_REVIEW_SECONDS,
        wording: Wording | None = None,
        model: ModelWording | None = None,
    ) -> None:
        self.slow_review_seconds = slow_review_seconds
        self.wording = wording
        self.model = model

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        text = get_message_text(message) if message is not None else ""
        task = context.current_task
        if task is not None:
            await self._continue(context, task, text, event_queue)
            return
        intent = review.classify(text)
        if intent is review.Intent.REVIEW and message is not None:
            await self._start_review(context, message, text, event_queue)
            return
        if self.wording is not None:
            reply = {
                review.Intent.LANGUAGES: self.wording.languages,
                review.Intent.RULES: self.wording.rules,
            }.get(intent, self.wording.help)()
        else:
            reply = {
                review.Intent.LANGUAGES: review.languages_text,
                review.Intent.RULES: review.rules_text,
            }.get(intent, review.help_text)()
        await event_queue.enqueue_event(new_text_message(reply, context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # CancelTask: the SDK calls this, then cancels the running execute() (if any).
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel(
            updater.new_agent_message([new_text_part("Review canceled.", "text/plain")])
        )

    async def _start_review(
        self, context: RequestContext, message: Message, text: str, event_queue: EventQueue
    ) -> None:
        task = Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[message],
        )
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await self._review(updater, text, file_name=None)

    async def _continue(
        self, context: RequestContext, task: Task, text: str, event_queue: EventQueue
    ) -> None:
        """A follow-up message on an existing task (the SDK rejects terminal tasks)."""
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            return  # nothing is asked of the user: the running review goes on
        if review.classify(text) is review.Intent.REVIEW:
            await self._review(updater, text, file_name=None)
            return
        pending = _pending_diff(task)
        if pending is None:  # cannot happen for tasks this executor created
            await updater.failed(_agent_text(updater, "I lost the diff of this task."))
            return
        if not review.is_plausible_file_name(text):
            await updater.requires_input(
                _agent_text(updater, f"{text.strip()!r} is not a file path. {_ASK_FILE_NAME}")
            )
            return
        await self._review(updater, pending, file_name=text.strip())

    async def _review(self, updater: TaskUpdater, diff_text: str, file_name: str | None) -> None:
        files = review.parse_unified_diff(diff_text)
        if file_name is None and any(diff.path is None for diff in files):
            await updater.start_work()
            ask = _ASK_FILE_NAME if self.wording is None else self.wording.ask_file_name()
            await updater.requires_input(_agent_text(updater, ask))
            return
        files = tuple(
            dataclasses.replace(diff, path=file_name) if diff.path is None else diff
            for diff in files
        )
        if review.is_slow(diff_text):
            await updater.start_work(
                _agent_text(
                    updater,
                    f"Reviewing slowly: this task stays in progress until it is canceled "
                    f"or {self.slow_review_seconds:g} seconds pass.",
                )
            )
            # CancelTask cancels this coroutine; otherwise the review finishes normally.
            await asyncio.sleep(self.slow_review_seconds)
        else:
            await updater.start_work()
        if self.model is not None:
            named = diff_text if file_name is None else _with_file_name(diff_text, file_name)
            try:
                text = await self.model.review(named)
            except ModelError as exc:
                await updater.failed(_agent_text(updater, f"I could not word the review: {exc}"))
                return
        else:
            text = self._review_text(review.review_diff(files))
        await updater.add_artifact(
            # Text only: a data part is a protobuf Struct, whose keys the SDK writes in an
            # order that changes from one process to the next (upb's seeded hash map).
            parts=[new_text_part(text, "text/plain")],
            name="review",
        )
        await updater.complete()

    def _review_text(self, result: review.Review) -> str:
        if self.wording is None:
            return review.format_review(result)
        return self.wording.review(result)


def _with_file_name(diff_text: str, file_name: str) -> str:
    """A diff without a file name header, given one (for a model's or a tool's review)."""
    return f"--- a/{file_name}\n+++ b/{file_name}\n{diff_text}"


def _agent_text(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([new_text_part(text, "text/plain")])


def _pending_diff(task: Task) -> str | None:
    """The text of the latest user message of `task` that carries a diff.

    (The message being handled is not a diff, so it is never the one found.)
    """
    for message in reversed(task.history):
        if message.role != Role.ROLE_USER:
            continue
        text = get_message_text(message)
        if review.classify(text) is review.Intent.REVIEW:
            return text
    return None
