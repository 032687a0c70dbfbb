// The @a2a-js/sdk client (A2A 1.0) on its gRPC transport: `node js_grpc_client.mjs URL`.
// From the agent card at URL it takes the GRPC interface only; it asks a question, sends a
// diff (a task), reads the task back, streams a second review, cancels a slow review while
// its stream is open, and asks for a task that does not exist. Prints one JSON line of what
// it saw (ids left out, their links kept).
import { randomUUID } from "node:crypto";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";
import { Role } from "@a2a-js/sdk";

const DIFF =
  "--- a/src/cart.py\n+++ b/src/cart.py\n@@ -1,2 +1,3 @@\n def total(items):\n" +
  "+    print(items)  # TODO remove\n     return sum(items)\n";

function message(text) {
  // every field, as the transport's protobuf encoder needs them
  return {
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function texts(parts) {
  return (parts || []).map((part) => (part.content ? part.content.value : null));
}

// a stream's event: { payload: { $case: "task" | "statusUpdate" | "artifactUpdate" | "message" } }
function kind(event) {
  const { $case: name, value } = event.payload;
  if (name === "task" || name === "statusUpdate") return [name, value.status.state];
  if (name === "artifactUpdate") return [name, value.artifact.name];
  return [name, texts(value.parts)];
}

function taskId(event) {
  const { $case: name, value } = event.payload;
  return name === "task" ? value.id : value.taskId;
}

const url = process.argv[2];
const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new GrpcTransportFactory()],
  preferredTransports: ["GRPC"],
});
const client = await new ClientFactory(options).createFromUrl(url);
const seen = {};
const answer = await client.sendMessage({ message: message("Which languages do you review?") });
seen.question = [answer.status ? "task" : "message", texts(answer.parts)];
const task = await client.sendMessage({ message: message(DIFF) });
seen.review = [task.status.state, task.artifacts.map((a) => [a.name, texts(a.parts)])];
const again = await client.getTask({ id: task.id });
seen.get_task = [again.id === task.id, again.status.state];
seen.stream = [];
for await (const event of client.sendMessageStream({ message: message(DIFF) })) {
  seen.stream.push(kind(event));
}
const slow = client.sendMessageStream({ message: message("please review slowly\n" + DIFF) });
const opened = [];
let slowId = null;
for await (const event of slow) {
  opened.push(kind(event));
  slowId = slowId || taskId(event);
  if (opened.length === 2) {
    const canceled = await client.cancelTask({ id: slowId });
    seen.canceled = canceled.status.state;
  }
}
seen.slow = opened;
try {
  await client.getTask({ id: "tck-missing-" + randomUUID().slice(0, 8) });
  seen.missing = "no error";
} catch (error) {
  seen.missing = error.constructor.name;
}
process.stdout.write(JSON.stringify(seen) + "\n");
