// An editor, as far as ACP goes: the official TypeScript SDK (@agentclientprotocol/sdk) drives
// `braincode acp` through one scenario and prints what it saw as one JSON object on stdout.
//
//   node client.mjs            env: ACP_SDK (the SDK's directory), BRAINCODE_BIN, ACP_CWD
//
// 1. initialize (the editor serves its files) → session/new → a prompt whose model edits a
//    file with an unsaved buffer (allowed; read and written through the editor) and runs a
//    command (rejected); 2. a prompt whose model is slow, a second prompt meanwhile (refused),
//    then session/cancel; 3. bad input: an unknown session, an unknown method; 4. stdin
//    closed, the process waited for; 5. a new process loads the session back.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const sdk = await import(path.join(process.env.ACP_SDK, "dist/v1/stable/acp.js"));
const { client, ndJsonStream, methods } = sdk;
const cwd = process.env.ACP_CWD;

function start() {
  const child = spawn(process.env.BRAINCODE_BIN, ["acp"], {
    cwd,
    env: process.env,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, exited, stream };
}

function errorOf(err) {
  return { code: err?.code ?? null, message: String(err?.message ?? err), data: err?.data ?? null };
}

async function expectError(promise) {
  try {
    await promise;
    return { code: null, message: "no error" };
  } catch (err) {
    return errorOf(err);
  }
}

const result = {};
const updates = [];
// The editor's buffers: src/token.rs has an unsaved line the disk does not.
const UNSAVED = "// unsaved buffer line\n";
const fsReads = [];
const fsWrites = [];
const permissions = [];
const answers = ["allow_once", "reject_once"];

const first = start();
const app = client({ name: "acp-test-client" })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    const kind = answers[permissions.length] ?? "reject_once";
    permissions.push({
      title: params.toolCall.title,
      kind: params.toolCall.kind,
      content: (params.toolCall.content ?? []).map((c) => c.type),
      diffPath: (params.toolCall.content ?? []).find((c) => c.type === "diff")?.path ?? null,
      options: params.options.map((o) => o.kind),
      answered: kind,
    });
    const option = params.options.find((o) => o.kind === kind);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
    fsReads.push(params.path);
    const disk = readFileSync(params.path, "utf8");
    return { content: params.path.endsWith("src/token.rs") ? UNSAVED + disk : disk };
  })
  .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
    fsWrites.push({ path: params.path, content: params.content });
    writeFileSync(params.path, params.content);
    return {};
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  });

await app.connectWith(first.stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  });
  result.initialize = init;
  const session = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  result.sessionId = session.sessionId;
  result.modes = session.modes;

  const one = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "Tokens must be longer than 8 characters; then run the tests." }],
  });
  result.first = { stopReason: one.stopReason, usage: one.usage ?? null, updates: updates.splice(0) };
  result.permissions = permissions.slice();
  result.fsReads = fsReads.slice();
  result.fsWrites = fsWrites.slice();

  const slow = ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "please wait for the slow model" }],
  });
  // Wait for the run to be under way (its first update), then try a second prompt.
  for (let i = 0; i < 200 && updates.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  result.busy = await expectError(
    ctx.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "and this too" }],
    }),
  );
  const cancelledAt = Date.now();
  await ctx.notify(methods.agent.session.cancel, { sessionId: session.sessionId });
  const two = await slow;
  result.second = {
    stopReason: two.stopReason,
    cancelToAnswerMs: Date.now() - cancelledAt,
    updates: updates.splice(0),
  };

  result.unknownSession = await expectError(
    ctx.request(methods.agent.session.prompt, {
      sessionId: "no-such-session",
      prompt: [{ type: "text", text: "hello" }],
    }),
  );
  result.unknownMethod = await expectError(ctx.request("braincode/no_such_method", {}));
  result.badMode = await expectError(
    ctx.request(methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "turbo" }),
  );
  result.setMode = await ctx.request(methods.agent.session.setMode, {
    sessionId: session.sessionId,
    modeId: "read-only",
  });
});
first.child.stdin.end();
result.firstExit = await first.exited;

const second = start();
const loaded = [];
const loader = client({ name: "acp-test-loader" }).onNotification(
  methods.client.session.update,
  ({ params }) => {
    loaded.push(params);
  },
);
await loader.connectWith(second.stream, async (ctx) => {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  result.load = await ctx.request(methods.agent.session.load, {
    sessionId: result.sessionId,
    cwd,
    mcpServers: [],
  });
  result.loadUpdates = loaded.slice();
});
second.child.stdin.end();
result.secondExit = await second.exited;

process.stdout.write(JSON.stringify(result));
