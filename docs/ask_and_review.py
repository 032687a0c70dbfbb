"""An A2A client as a user writes it (a2a-sdk), knowing nothing of the recorder.

    python docs/ask_and_review.py http://127.0.0.1:41241

It asks the code-reviewer which languages it reviews, has it review a diff, and reads the
review back with GetTask. The SDK picks a fresh uuid for every JSON-RPC id and messageId.
"""

import asyncio
import sys

from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, StreamResponse

DIFF = """--- a/src/cart.py
+++ b/src/cart.py
@@ -1,2 +1,3 @@
 def total(items):
+    print(items)  # TODO remove
     return sum(items)
"""


async def ask(client: Client, text: str) -> list[StreamResponse]:
    request = SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))
    return [event async for event in client.send_message(request)]


async def main(url: str) -> None:
    client = await create_client(url, client_config=ClientConfig(streaming=False))
    try:
        (answer,) = await ask(client, "Which languages do you review?")
        print(answer.message.parts[0].text)
        (review,) = await ask(client, DIFF)
        task = await client.get_task(GetTaskRequest(id=review.task.id))
        print(task.artifacts[0].parts[0].text)
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1]), 60))
