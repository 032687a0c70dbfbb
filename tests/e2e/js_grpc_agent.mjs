// An A2A agent on the @a2a-js/sdk server's gRPC binding (`grpcService` on @grpc/grpc-js), its
// card served over HTTP: `node js_grpc_agent.mjs`. It prints `serving HTTP_URL GRPC_ADDRESS`
// and runs until it gets SIGINT or SIGTERM. A message starting "hello" gets a message back;
// any other text becomes a task (SUBMITTED, WORKING, an artifact "echo", COMPLETED); one
// containing "wait" stays WORKING until CancelTask. Its ids are the SDK's (uuid4).
import http from "node:http";
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { Role, TaskState } from "@a2a-js/sdk";
import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { A2AService, UserBuilder, grpcService } from "@a2a-js/sdk/server/grpc";

const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
const waiting = new Map(); // task id -> resolve (a "wait" task, until it is canceled)

class Echo {
  async execute(context, bus) {
    const said = context.userMessage.parts.map((p) => (p.content ? p.content.value : "")).join(" ");
    const ids = { taskId: context.taskId, contextId: context.contextId };
    if (said.startsWith("hello")) {
      bus.publish({
        kind: "message",
        data: {
          messageId: randomUUID(), contextId: context.contextId, taskId: "", role: Role.ROLE_AGENT,
          parts: [text(`hello to you: ${said.length} characters`)], metadata: undefined,
          extensions: [], referenceTaskIds: [],
        },
      });
      bus.finished();
      return;
    }
    bus.publish({
      kind: "task",
      data: {
        id: context.taskId, contextId: context.contextId, status: status(TaskState.TASK_STATE_SUBMITTED),
        artifacts: [], history: [context.userMessage], metadata: undefined,
      },
    });
    bus.publish({ kind: "statusUpdate", data: { ...ids, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined } });
    if (said.includes("wait")) {
      const canceled = await new Promise((resolve) => {
        waiting.set(context.taskId, resolve);
        setTimeout(() => resolve(false), 30000);
      });
      if (canceled) return; // (cancelTask ended it)
    }
    bus.publish({
      kind: "artifactUpdate",
      data: {
        ...ids, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: randomUUID(), name: "echo", description: "", parts: [text(said.toUpperCase())], metadata: undefined, extensions: [] },
      },
    });
    bus.publish({ kind: "statusUpdate", data: { ...ids, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined } });
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    const resolve = waiting.get(taskId);
    waiting.delete(taskId);
    bus.publish({ kind: "statusUpdate", data: { taskId, contextId: "", status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined } });
    bus.finished();
    if (resolve) resolve(true);
  }
}

const grpcServer = new grpc.Server();
const grpcPort = await new Promise((resolve, reject) =>
  grpcServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) =>
    error ? reject(error) : resolve(port),
  ),
);
const card = {
  name: "js-echo", description: "An echo agent on the JS SDK's gRPC binding", version: "1.0.0",
  supportedInterfaces: [{ url: `127.0.0.1:${grpcPort}`, protocolBinding: "GRPC", tenant: "", protocolVersion: "1.0" }],
  provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {}, securityRequirements: [], defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"], signatures: [],
  skills: [{ id: "echo", name: "Echo", description: "Echoes", tags: ["echo"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Echo());
grpcServer.addService(A2AService, grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const cardJson = JSON.stringify({
  name: card.name, description: card.description, version: card.version,
  supportedInterfaces: [{ url: `127.0.0.1:${grpcPort}`, protocolBinding: "GRPC", protocolVersion: "1.0" }],
  capabilities: { streaming: true }, defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "Echo", description: "Echoes", tags: ["echo"] }],
});
const web = http.createServer((request, response) => {
  if (request.url === "/.well-known/agent-card.json") {
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end(cardJson);
  } else {
    response.writeHead(404);
    response.end();
  }
});
await new Promise((resolve) => web.listen(0, "127.0.0.1", resolve));
process.stdout.write(`serving http://127.0.0.1:${web.address().port} 127.0.0.1:${grpcPort}\n`);
const stop = () => {
  web.close();
  grpcServer.forceShutdown();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
