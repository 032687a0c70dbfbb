"""The guide's examples (shared/seed/000_ae6d117e1e9dfb23.txt), line for line.

"…" alone elides lines; a line ending in "…" is cut there.
"""

from __future__ import annotations

import dataclasses
import json

from recorder import Exchange, SseEvent

# "The envelope": the SendMessage example (02-message-reply.http)
SEED_MESSAGE_REPLY = """\
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json
…
{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "SendMessage",
  "params": {
    "message": {
      "messageId": "d95bafc8-f2a4-427b-9cf4-bb99f4bea973",
      "role": "ROLE_USER",
…
HTTP/1.1 200 OK
Content-Type: application/json

{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "message": {
      "messageId": "3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd",
      "contextId": "dc423c62-d5f4-48e5-82c0-4963b9bc4334",
      "role": "ROLE_AGENT",
…
"""

# "Streams as SSE frames"
SEED_STREAM = """\
HTTP/1.1 200 OK
Content-Type: text/event-stream

data: {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "728ba084-97eb-422b-b94b-b0fe9153ce2c", …

data: {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "728ba084-97eb-422b-b94b-b0fe9153ce2c", …
"""  # noqa: E501


# How the guide renders its blocks from tests/fixtures/seed (`recorder render` options): the
# plain line budget; the stream's first two frames of however many, with no closing "…"
SEED_MESSAGE_REPLY_OPTIONS = "pick=none"
SEED_STREAM_OPTIONS = "only=response pick=none max-lines=3 open-end"


def seed_stream_going_on(exchange: Exchange) -> Exchange:
    """The seed's stream with the two frames a review's stream goes on with (an artifact, the
    task completed): four frames, of which the guide shows two."""
    events = exchange.response.events
    assert events is not None and events[0].data is not None
    task_id = json.loads(events[0].data)["result"]["task"]["id"]
    more = (
        {"artifactUpdate": {"taskId": task_id, "artifact": {"parts": [{"text": "LGTM"}]}}},
        {"statusUpdate": {"taskId": task_id, "status": {"state": "TASK_STATE_COMPLETED"}}},
    )
    frames = tuple(
        SseEvent(data=json.dumps({"result": result, "id": 1, "jsonrpc": "2.0"})) for result in more
    )
    response = dataclasses.replace(exchange.response, events=(*events, *frames))
    return dataclasses.replace(exchange, response=response)
