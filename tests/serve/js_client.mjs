// The @a2a-js/sdk client (A2A 1.0) driving an agent: `node js_client.mjs URL`.
// It asks a question, sends a diff (a task), reads that task back, and asks for a task that
// does not exist; prints one JSON line of what it saw (ids left out).
import { randomUUID } from "node:crypto";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";

const DIFF =
  "--- a/src/cart.py\n+++ b/src/cart.py\n@@ -1,2 +1,3 @@\n def total(items):\n" +
  "+    print(items)  # TODO remove\n     return sum(items)\n";

function message(text) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text } }],
  };
}

function texts(parts) {
  return (parts || []).map((part) => (part.content ? part.content.value : null));
}

const url = process.argv[2];
const client = await new ClientFactory().createFromUrl(url);
const seen = {};
const answer = await client.sendMessage({ message: message("Which languages do you review?") });
// the result is a Task (it has a status) or a Message
seen.question = answer.status ? "task" : "message";
seen.question_text = texts(answer.parts);
const task = await client.sendMessage({ message: message(DIFF) });
seen.review = [task.status ? "task" : "message", task.status.state, task.artifacts.map((a) => a.name)];
const again = await client.getTask({ id: task.id, historyLength: 1 });
seen.get_task = [again.id === task.id, again.status.state, again.history.length];
try {
  await client.getTask({ id: "tck-missing-" + randomUUID().slice(0, 8) });
  seen.missing = "no error";
} catch (error) {
  seen.missing = error.constructor.name;
}
process.stdout.write(JSON.stringify(seen) + "\n");
