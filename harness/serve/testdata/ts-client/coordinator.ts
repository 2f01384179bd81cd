// An example of the client side of crux-sim serve, not part of crux-sim: a
// research coordinator (the background path of the background research
// recipe) on the official openai package, with a minimal background Work
// runtime of its own. crux-sim serve plays the model; this file is what a
// team's own coordinator would be.
//
//   node dist/coordinator.js                 # keeps the contract
//   node dist/coordinator.js --leak-status   # breaks it: puts the child's output in its status block
//
// OPENAI_BASE_URL is the URL serve printed ("listening on http://HOST:PORT/v1").
import OpenAI from "openai";
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from "openai/resources/chat/completions";

const client = new OpenAI({ apiKey: "none", baseURL: process.env.OPENAI_BASE_URL });
const leakStatus = process.argv.includes("--leak-status");
const question = "Why do leaves change color in autumn?";

// The recipe's two agents.
const coordinatorSystem = `You coordinate a research task.
1. Call research with run_in_background: true and retain its Work reference.
2. While it runs, draft an answer outline without inventing findings.
3. On a later model step, use the automatic work tool with action "result"
   and the retained id. If status is returned, wait or continue independent work.
4. Use the exact research result before writing the final answer.
`;
const researchSystem = "Research the question carefully. Return a concise summary and concrete findings.";
const findingsSchema = {
  type: "object",
  properties: { summary: { type: "string" }, findings: { type: "array", items: { type: "string" } } },
  required: ["summary", "findings"],
};

// The tools the coordinator's model is offered: the backgroundable child
// (its input plus the reserved run_in_background flag) and the automatic
// work tool with the contract's exact input.
const tools: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "research",
      description: "Research one question and return concise findings",
      parameters: {
        type: "object",
        properties: {
          question: { type: "string" },
          run_in_background: { type: "boolean", description: "Run in the background and return a work.ref at once." },
        },
        required: ["question"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "work",
      description: "Manage the background work you started.",
      parameters: {
        type: "object",
        properties: {
          action: { type: "string", enum: ["list", "status", "result", "cancel", "detach", "send"] },
          id: { type: "string" },
          timeout: { type: "string" },
          message: { type: "string" },
        },
        required: ["action"],
        additionalProperties: false,
      },
    },
  },
];

// A minimal process-local Work registry.
type State = "queued" | "running" | "completed" | "failed" | "cancel-requested" | "cancelled";
interface Work {
  id: string;
  label: string;
  targetId: string;
  state: State;
  createdAt: Date;
  startedAt: Date;
  finishedAt?: Date;
  output?: string;
  done: Promise<void>;
}
const works: Work[] = [];

function ref(w: Work) {
  return { kind: "work.ref", id: w.id, targetId: w.targetId, guarantees: { execution: "process-local", rejoin: "process-local" } };
}

function projection(w: Work) {
  return {
    work: ref(w),
    targetLabel: w.label,
    state: w.state,
    attachment: "attached",
    attempt: 1,
    createdAt: w.createdAt.toISOString(),
    startedAt: w.startedAt.toISOString(),
    ...(w.finishedAt ? { finishedAt: w.finishedAt.toISOString() } : {}),
    resultAvailable: w.state === "completed",
  };
}

// The status block: unfinished Work first, then finished, at most 12 rows
// of id, label, state, elapsed seconds and result availability.
function statusBlock(): string | undefined {
  if (works.length === 0) return undefined;
  const now = Date.now();
  const finished = (s: State) => s === "completed" || s === "failed" || s === "cancelled";
  const rows = [...works.filter((w) => !finished(w.state)), ...works.filter((w) => finished(w.state)).reverse()]
    .slice(0, 12)
    .map((w) => {
      const secs = Math.floor(((w.finishedAt?.getTime() ?? now) - w.startedAt.getTime()) / 1000);
      let row = `- ${w.id} · ${w.label} · ${w.state} ${secs}s`;
      if (w.state === "completed") row += " · Result available";
      if (leakStatus && w.output) row += " · " + w.output; // the defect the second variant has
      return row;
    });
  return ["Background work:", ...rows].join("\n");
}

// The research child: its own prompt, its own conversation, a structured
// output. Its output is kept exactly as the model wrote it.
async function runResearch(input: { question: string }): Promise<string> {
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: researchSystem },
    { role: "user", content: input.question },
  ];
  const resp = await client.chat.completions.create({
    model: "crux-sim/research-agent",
    messages,
    response_format: { type: "json_schema", json_schema: { name: "research_agent", schema: findingsSchema } },
  });
  const content = resp.choices[0]?.message.content;
  if (!content) throw new Error("research returned no output");
  return content;
}

function startBackground(input: { question: string }): Work {
  const now = new Date();
  const w: Work = {
    id: `w-${works.length + 1}`, label: "research", targetId: "research-agent",
    state: "running", createdAt: now, startedAt: now, done: Promise.resolve(),
  };
  w.done = runResearch(input).then(
    (out) => { w.output = out; w.state = "completed"; w.finishedAt = new Date(); },
    () => { w.state = "failed"; w.finishedAt = new Date(); },
  );
  works.push(w);
  return w;
}

function parseTimeout(t: string | undefined): number {
  if (t === undefined) return 30_000;
  const m = /^(\d+)\s*(ms|s|m|h|d)$/.exec(t.trim());
  if (!m) throw new Error(`timeout ${JSON.stringify(t)} is not a duration such as "5s"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "ms" | "s" | "m" | "h" | "d"];
  return Math.min(Number(m[1]) * unit, 30_000);
}

async function workTool(args: { action: string; id?: string; timeout?: string }): Promise<string> {
  if (args.action === "list") return JSON.stringify(works.slice(0, 50).map(projection));
  const w = works.find((x) => x.id === args.id);
  if (!w) return JSON.stringify({ status: "not_found" });
  switch (args.action) {
    case "status":
      return JSON.stringify(projection(w));
    case "result": {
      if (w.state === "completed") return w.output!;
      const wait = parseTimeout(args.timeout);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([w.done, new Promise((r) => (timer = setTimeout(r, wait)))]);
      clearTimeout(timer);
      return (w.state as State) === "completed" ? w.output! : JSON.stringify(projection(w)); // it may have finished while waiting
    }
  }
  return JSON.stringify({ error: { code: "invalid_arguments", message: `action ${args.action} is not supported here` } });
}

async function callTool(call: ChatCompletionMessageToolCall): Promise<string> {
  if (call.type !== "function") return JSON.stringify({ error: { code: "unknown_tool", message: "not a function call" } });
  let args: any;
  try {
    args = JSON.parse(call.function.arguments);
  } catch (e) {
    return JSON.stringify({ error: { code: "invalid_arguments", message: String(e) } });
  }
  switch (call.function.name) {
    case "research":
      if (args.run_in_background === true) return JSON.stringify(ref(startBackground({ question: args.question })));
      return runResearch({ question: args.question });
    case "work":
      return workTool(args);
  }
  return JSON.stringify({ error: { code: "unknown_tool", message: `no tool ${call.function.name}` } });
}

// One provider step, streamed: the coordinator reads server-sent events and
// assembles the text and the tool calls from their deltas.
async function step(history: ChatCompletionMessageParam[]) {
  const status = statusBlock();
  const messages: ChatCompletionMessageParam[] = [{ role: "system", content: coordinatorSystem }, ...history];
  if (status) messages.push({ role: "system", content: status }); // trailing, never stored in history
  const stream = await client.chat.completions.create({ model: "crux-sim/research-coordinator", messages, tools, stream: true });
  let text = "";
  const calls: { id: string; name: string; arguments: string }[] = [];
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta;
    if (!d) continue;
    if (d.content) text += d.content;
    for (const tc of d.tool_calls ?? []) {
      const c = (calls[tc.index] ??= { id: "", name: "", arguments: "" });
      if (tc.id) c.id = tc.id;
      if (tc.function?.name) c.name = tc.function.name;
      if (tc.function?.arguments) c.arguments += tc.function.arguments;
    }
  }
  return { text, calls };
}

async function main() {
  const history: ChatCompletionMessageParam[] = [{ role: "user", content: question }];
  for (let n = 1; n <= 20; n++) {
    const { text, calls } = await step(history);
    if (calls.length === 0) {
      console.log(text);
      await Promise.all(works.map((w) => w.done));
      return;
    }
    const toolCalls: ChatCompletionMessageToolCall[] = calls.map((c) => ({
      id: c.id, type: "function", function: { name: c.name, arguments: c.arguments },
    }));
    history.push({ role: "assistant", content: text || null, tool_calls: toolCalls });
    for (const call of toolCalls) {
      history.push({ role: "tool", tool_call_id: call.id, content: await callTool(call) });
    }
  }
  throw new Error("the coordinator did not finish in 20 steps");
}

main().catch((e) => {
  console.error("coordinator failed:", e);
  process.exit(1);
});
