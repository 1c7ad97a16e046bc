// mcp_client.mjs — the official MCP TypeScript SDK client driving sandboxd-mcp over stdio.
// Usage: node mcp_client.mjs SCENARIO; the server command comes from $SANDBOXD_MCP_CMD (JSON
// array) and talks to $SANDBOXD_SOCKET. Prints one JSON object with what the client saw; the
// assertions are in tests/integration/test_mcp.py.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const scenario = process.argv[2];
const [command, ...args] = JSON.parse(process.env.SANDBOXD_MCP_CMD);
const env = { PATH: process.env.PATH, SANDBOXD_SOCKET: process.env.SANDBOXD_SOCKET };
if (process.env.PYTHONPATH) env.PYTHONPATH = process.env.PYTHONPATH;

async function connect(elicitation, answer) {
  const capabilities = elicitation ? { elicitation: {} } : {};
  const client = new Client({ name: "sandboxd-test", version: "1.0.0" }, { capabilities });
  const asked = [];
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return answer;
    });
  }
  await client.connect(new StdioClientTransport({ command, args, env, stderr: "inherit" }));
  return { client, asked };
}

const text = (r) => r.content.map((c) => c.text).join("");
const brief = (r) => ({ isError: !!r.isError, text: text(r), data: r.structuredContent ?? null });

async function tools() {
  const { client } = await connect(false);
  const out = { server: client.getServerVersion(), tools: (await client.listTools()).tools };
  const call = (name, a) => client.callTool({ name, arguments: a }).then(brief);
  out.run = await call("run", { command: "echo hello; echo oops >&2; exit 3" });
  out.state1 = await call("run", { command: "cd /tmp && export MCPVAR=kept" });
  out.state2 = await call("run", { command: 'echo "$PWD $MCPVAR"' });
  out.bg = await call("run", { command: "echo bg-out; sleep 0.3; echo bg-done", background: true });
  const id = out.bg.data.exec_id;
  let offset = 0, all = "";
  for (let i = 0; i < 50; i++) {
    const r = await call("process_output", { exec_id: id, offset, wait_ms: 5000 });
    all += r.data.data;
    offset = r.data.next_offset;
    if (r.data.eof) break;
  }
  out.bgOutput = all;
  out.write = await call("file_write", { path: "/tmp/sandboxd-mcp-test/f.txt", content: "line\n", mkdir: true });
  out.read = await call("file_read", { path: "/tmp/sandboxd-mcp-test/f.txt" });
  out.denied = await call("run", { command: "rm -rf /" });
  out.askNoElicit = await call("run", { command: "rm -r /tmp/sandboxd-mcp-nothing" });
  out.created = await call("sandbox_create", { name: "mcp-box" });
  out.listed = await call("sandbox_list", {});
  out.destroyed = await call("sandbox_destroy", { sandbox: "mcp-box" });
  out.badTool = await client.callTool({ name: "nope", arguments: {} }).then(brief);
  await client.close();
  return out;
}

async function elicit() {
  const accept = { action: "accept", content: { decision: "once" } };
  const { client, asked } = await connect(true, accept);
  const call = (name, a) => client.callTool({ name, arguments: a }).then(brief);
  const out = {};
  out.approved = await call("run", { command: "rm -r /tmp/sandboxd-mcp-nothing" });
  out.asked = asked.slice();
  await client.close();
  const d = await connect(true, { action: "decline" });
  out.declined = await d.client.callTool({ name: "run", arguments: { command: "rm -r /tmp/sandboxd-mcp-nothing" } }).then(brief);
  out.askedDecline = d.asked.length;
  await d.client.close();
  return out;
}

async function cancel() {
  const { client } = await connect(false);
  const ac = new AbortController();
  const pending = client.callTool({ name: "run", arguments: { command: "sleep 60; echo never" } },
    undefined, { signal: ac.signal }).then(brief, (e) => ({ aborted: String(e) }));
  let seen = false;
  for (let i = 0; i < 200 && !seen; i++) {
    const l = await client.callTool({ name: "process_list", arguments: {} }).then(brief);
    seen = l.data.processes.some((p) => p.command === "sleep 60; echo never" && p.state === "running");
  }
  ac.abort();
  const out = { seenRunning: seen, call: await pending };
  let gone = false;
  for (let i = 0; i < 200 && !gone; i++) {
    const l = await client.callTool({ name: "process_list", arguments: {} }).then(brief);
    gone = !l.data.processes.some((p) => p.command === "sleep 60; echo never");
  }
  out.killed = gone;
  await client.close();
  return out;
}

const scenarios = { tools, elicit, cancel };
scenarios[scenario]().then(
  (out) => { process.stdout.write(JSON.stringify(out) + "\n"); process.exit(0); },
  (e) => { process.stderr.write(String(e.stack || e) + "\n"); process.exit(1); });
