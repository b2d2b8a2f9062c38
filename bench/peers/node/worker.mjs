// The scenarios on pi-agent-core (npm @mariozechner/pi-agent-core): its low-level loop,
// runAgentLoop(prompts, context, config, emit, signal, streamFn), with a scripted stream function.
//
//   node --expose-gc bench/peers/node/worker.mjs CASE ARG... --reps N [--warmup W] [--convert C]
//
// CASE is tool_loop TURNS, tool_loop_history TURNS HISTORY or stream DELTAS; --convert picks the
// convertToLlm function (filter, the default, or identity). Prints one JSON
// line, like bench/peers/worker.py: {"samples": [seconds...], "rss_kb": peak RSS,
// "base_rss_kb": RSS after imports and warm-up}.
//
// The scripted model: every event of every reply is built before the clock starts, as the Python
// peers' scripted replies are. The events are those a pi-ai provider pushes: start, then
// text_start / text_delta... / text_end or toolcall_start / toolcall_delta / toolcall_end, then
// done with the final AssistantMessage. As in pi-ai's providers, every event of a reply carries
// the same AssistantMessage object as its partial (providers mutate one `output` object while
// streaming; here it already holds its final content). The stream function returns a fresh
// AssistantMessageEventStream, which the loop consumes with `for await`, and feeds it the reply's
// events one at a time, each when the loop asks for it (see feed()).

import { runAgentLoop } from "@mariozechner/pi-agent-core";
import { Type, createAssistantMessageEventStream } from "@mariozechner/pi-ai";

const MODEL = {
  id: "bench",
  name: "bench",
  api: "openai-completions",
  provider: "bench",
  baseUrl: "http://127.0.0.1:0/v1",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 4096,
};

// convertToLlm is a required part of runAgentLoop's config. The default here ("filter") is what
// pi-agent-core's Agent class uses when none is given (defaultConvertToLlm) and what its README's
// low-level example passes: keep the user, assistant and toolResult messages, a pass over the
// whole history each turn. "--convert identity" passes the array through instead.
const CONVERT = {
  filter: (messages) =>
    messages.filter((m) => m.role === "user" || m.role === "assistant" || m.role === "toolResult"),
  identity: (messages) => messages,
};
let CONFIG; // { model: MODEL, convertToLlm }, set by main()

const NOOP = {
  name: "noop",
  label: "noop",
  description: "Do nothing.",
  parameters: Type.Object({ n: Type.Integer() }),
  execute: async (toolCallId, params) => ({ content: [{ type: "text", text: "ok" }], details: {} }),
};

function usage() {
  return {
    input: 10,
    output: 5,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 15,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function assistant(content, stopReason, timestamp) {
  return {
    role: "assistant",
    content,
    api: MODEL.api,
    provider: MODEL.provider,
    model: MODEL.id,
    usage: usage(),
    stopReason,
    timestamp,
  };
}

function toolReply(i, timestamp) {
  const call = { type: "toolCall", id: `call_${i + 1}`, name: "noop", arguments: { n: i } };
  const out = assistant([call], "toolUse", timestamp);
  return [
    { type: "start", partial: out },
    { type: "toolcall_start", contentIndex: 0, partial: out },
    { type: "toolcall_delta", contentIndex: 0, delta: JSON.stringify(call.arguments), partial: out },
    { type: "toolcall_end", contentIndex: 0, toolCall: call, partial: out },
    { type: "done", reason: "toolUse", message: out },
  ];
}

// A text reply whose text streams as the deltas `chunks`.
function textReply(text, chunks, timestamp) {
  const out = assistant([{ type: "text", text }], "stop", timestamp);
  const events = [
    { type: "start", partial: out },
    { type: "text_start", contentIndex: 0, partial: out },
  ];
  for (const delta of chunks) events.push({ type: "text_delta", contentIndex: 0, delta, partial: out });
  events.push({ type: "text_end", contentIndex: 0, content: text, partial: out });
  events.push({ type: "done", reason: "stop", message: out });
  return events;
}

// Hands the loop each event when it asks for one, as a stream whose next chunk arrives while the
// loop waits. pi-ai's EventStream keeps the pending reads of its async iterator in `waiting` (a
// TypeScript private, a plain array at run time); the iterator adds one when its queue is empty,
// and this stream's `waiting.push` then pushes the next event at once, which resolves that read.
// The queue stays empty and nothing spins. (Pushing a whole reply at once would leave it in the
// queue, whose Array.shift() copies what is left: a 10,000-delta reply then costs more per delta
// than a 1,000-delta one; 50,000 queued events cost 20-30 times more each.) Without `waiting`,
// the whole reply is pushed at once.
function feed(stream, events) {
  const waiting = stream.waiting;
  if (!Array.isArray(waiting)) {
    for (let i = 0; i < events.length; i++) stream.push(events[i]);
    stream.end();
    return;
  }
  let next = 0;
  waiting.push = function (read) {
    const length = Array.prototype.push.call(this, read);
    if (next < events.length) {
      stream.push(events[next++]);
      if (next === events.length) stream.end();
    }
    return length;
  };
}

function scriptedStreamFn(replies) {
  let next = 0;
  const streamFn = (model, context, options) => {
    const events = replies[next++];
    const stream = createAssistantMessageEventStream();
    feed(stream, events);
    return stream;
  };
  streamFn.calls = () => next;
  return streamFn;
}

function toolScript(turns) {
  const ts = Date.now();
  const replies = [];
  for (let i = 0; i < turns; i++) replies.push(toolReply(i, ts));
  replies.push(textReply("done", ["done"], ts));
  return replies;
}

function history(n) {
  const ts = Date.now();
  const out = [];
  for (let i = 0; i < n / 2; i++) {
    const call = { type: "toolCall", id: `h${i}`, name: "noop", arguments: { n: i } };
    out.push(assistant([call], "toolUse", ts));
    out.push({
      role: "toolResult",
      toolCallId: `h${i}`,
      toolName: "noop",
      content: [{ type: "text", text: "ok" }],
      details: {},
      isError: false,
      timestamp: ts,
    });
  }
  return out;
}

function prompt() {
  return [{ role: "user", content: "go", timestamp: Date.now() }];
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const ignore = () => {};

async function toolLoopFrom(turns, hist) {
  const streamFn = scriptedStreamFn(toolScript(turns));
  const context = { systemPrompt: "You are a benchmark.", messages: history(hist), tools: [NOOP] };
  const prompts = prompt();
  const t0 = performance.now();
  const msgs = await runAgentLoop(prompts, context, CONFIG, ignore, undefined, streamFn);
  const dt = (performance.now() - t0) / 1000;
  check(msgs.length === 2 * turns + 2, `${msgs.length} messages`);
  check(msgs[msgs.length - 1].content[0].text === "done", "final text");
  check(msgs[2].role === "toolResult" && !msgs[2].isError, "tool result");
  check(streamFn.calls() === turns + 1, "model calls");
  return dt;
}

const CASES = {
  tool_loop: (turns) => toolLoopFrom(turns, 0),
  tool_loop_history: (turns, hist) => toolLoopFrom(turns, hist),
  async stream(deltas) {
    const text = "x".repeat(deltas);
    const chunks = Array.from({ length: deltas }, () => "x");
    const streamFn = scriptedStreamFn([textReply(text, chunks, Date.now())]);
    const context = { systemPrompt: "You are a benchmark.", messages: [], tools: [] };
    const prompts = prompt();
    let seen = 0;
    const listener = (event) => {
      if (event.type === "message_update") seen++;
    };
    const t0 = performance.now();
    const msgs = await runAgentLoop(prompts, context, CONFIG, listener, undefined, streamFn);
    const dt = (performance.now() - t0) / 1000;
    check(seen >= deltas, `${seen} message_update events`);
    check(msgs[1].content[0].text.length === deltas, "final text");
    return dt;
  },
};

function parseArgs(argv) {
  const opts = { reps: 5, warmup: 1, convert: "filter", args: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--reps") opts.reps = Number(argv[++i]);
    else if (argv[i] === "--warmup") opts.warmup = Number(argv[++i]);
    else if (argv[i] === "--convert") opts.convert = argv[++i];
    else if (opts.case === undefined) opts.case = argv[i];
    else opts.args.push(Number(argv[i]));
  }
  if (!(opts.case in CASES)) throw new Error(`unknown case ${opts.case}; one of ${Object.keys(CASES)}`);
  if (!(opts.convert in CONVERT)) throw new Error(`unknown --convert ${opts.convert}; one of ${Object.keys(CONVERT)}`);
  return opts;
}

const collect = typeof globalThis.gc === "function" ? globalThis.gc : () => {};

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const fn = CASES[opts.case];
  CONFIG = { model: MODEL, convertToLlm: CONVERT[opts.convert] };
  for (let i = 0; i < opts.warmup; i++) await fn(...opts.args);
  collect();
  const base = Math.round(process.memoryUsage().rss / 1024);
  const samples = [];
  for (let i = 0; i < opts.reps; i++) {
    collect();
    samples.push(await fn(...opts.args));
  }
  const peak = process.resourceUsage().maxRSS; // KB
  console.log(JSON.stringify({ samples, rss_kb: peak, base_rss_kb: base }));
}

await main();
