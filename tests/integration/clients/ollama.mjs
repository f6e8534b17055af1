// The official `ollama` npm client (ollama-js, pinned in package.json), unchanged, against llmd's
// Ollama API (/api/*). Run by ollama_client_test.cc; see common.mjs for the environment and the
// output format.
import { Ollama } from 'ollama';

import { check, checkSchema, env, parseJson, reportSchema, runCases, show, weatherParams } from './common.mjs';

// LLMD_BASE_URL is the OpenAI API's (http://127.0.0.1:PORT/v1); Ollama's paths hang off the root.
const host = env.baseURL.replace(/\/v1\/?$/, '');
const auth = { Authorization: 'Bearer ' + env.apiKey };
const ollama = new Ollama({ host, headers: auth });
const model = env.model;
const hello = [{ role: 'user', content: 'Say hello.' }];
const greedy = (n) => ({ num_predict: n, temperature: 0 });

const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather in a city', parameters: weatherParams },
};
const askWeather = [{ role: 'user', content: 'What is the weather in Paris?' }];

function checkTime(v, where) {
  check(typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v) && !Number.isNaN(Date.parse(v)),
    `${where} is ${show(v)}, not an RFC 3339 UTC time`);
}

// The fields every response object has, and the final one's numbers.
function checkResponse(r, where, { done }) {
  check(r.model === model, `${where}.model is ${show(r.model)}`);
  checkTime(r.created_at, `${where}.created_at`);
  check(r.done === done, `${where}.done is ${show(r.done)}, want ${done}`);
  if (!done) return;
  check(['stop', 'length'].includes(r.done_reason), `${where}.done_reason is ${show(r.done_reason)}`);
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_count', 'prompt_eval_duration', 'eval_count', 'eval_duration']) {
    check(Number.isInteger(r[k]) && r[k] >= 0, `${where}.${k} is ${show(r[k])}`);
  }
  check(r.total_duration > 0, `${where}.total_duration is ${r.total_duration}`);
}

function checkMessage(m, where) {
  check(m?.role === 'assistant', `${where}.role is ${show(m?.role)}`);
  check(typeof m.content === 'string', `${where}.content is ${show(m.content)}`);
  check(m.thinking === undefined || typeof m.thinking === 'string', `${where}.thinking is ${show(m.thinking)}`);
}

// A tool call as Ollama sends it: arguments an object (never JSON text), matching the schema.
function checkToolCalls(calls, where) {
  if (calls === undefined) return;
  check(Array.isArray(calls) && calls.length >= 1, `${where} is ${show(calls)}`);
  calls.forEach((c, i) => {
    const w = `${where}[${i}]`;
    check(c.function?.name === 'get_weather', `${w}.function.name is ${show(c.function?.name)}`);
    const args = c.function.arguments;
    check(args !== null && typeof args === 'object' && !Array.isArray(args), `${w}.function.arguments is ${show(args)}, not an object`);
    checkSchema(args, weatherParams, `${w} arguments`);
  });
}

// Reads a stream as a client does: text, thinking and tool calls added up, and the last object.
async function readStream(stream, chat) {
  const out = { content: '', thinking: '', calls: [], last: null, parts: 0 };
  for await (const part of stream) {
    out.parts++;
    checkResponse(part, `part ${out.parts}`, { done: part.done });
    if (chat) {
      checkMessage(part.message, `part ${out.parts}.message`);
      out.content += part.message.content;
      out.thinking += part.message.thinking ?? '';
      checkToolCalls(part.message.tool_calls, `part ${out.parts}.message.tool_calls`);
      out.calls.push(...(part.message.tool_calls ?? []));
    } else {
      check(typeof part.response === 'string', `part ${out.parts}.response is ${show(part.response)}`);
      out.content += part.response;
      out.thinking += part.thinking ?? '';
    }
    if (part.done) out.last = part;
  }
  check(out.last !== null, 'the stream had no done:true object');
  return out;
}

// `again`: the same messages were sent before, so the prompt may be served from the KV cache
// whole (prompt_eval_count counts the tokens evaluated: none then).
async function chat({ again = false } = {}) {
  const r = await ollama.chat({ model, messages: hello, options: greedy(8) });
  checkResponse(r, 'reply', { done: true });
  checkMessage(r.message, 'message');
  check(r.eval_count > 0 && r.eval_count <= 8, `eval_count is ${r.eval_count}`);
  if (!again) check(r.prompt_eval_count > 0, `prompt_eval_count is ${r.prompt_eval_count}`);
  return r;
}

async function chatStream() {
  const whole = await chat({ again: true });
  const s = await readStream(await ollama.chat({ model, messages: hello, options: greedy(8), stream: true }), true);
  // Sent just before: the whole prompt is in the cache, with its last token's logits.
  check(s.last.prompt_eval_count === 0, `the repeated prompt evaluated ${s.last.prompt_eval_count} tokens`);
  check(s.content === whole.message.content,
    `streamed text ${show(s.content)} differs from the whole answer ${show(whole.message.content)}`);
  check(s.last.eval_count === whole.eval_count, `stream eval_count ${s.last.eval_count}, whole ${whole.eval_count}`);
  check(s.last.message.content === '', `the done object repeats text: ${show(s.last.message)}`);
}

async function generate() {
  const r = await ollama.generate({ model, prompt: 'Once upon', options: greedy(8) });
  checkResponse(r, 'reply', { done: true });
  check(typeof r.response === 'string', `response is ${show(r.response)}`);
  check(r.context === undefined, `context is ${show(r.context)} (llmd keeps none)`);
  // raw: the prompt as is, no template.
  const raw = await ollama.generate({ model, prompt: 'Once upon a time', raw: true, options: greedy(4) });
  checkResponse(raw, 'raw reply', { done: true });
  check(typeof raw.response === 'string' && raw.eval_count <= 4, `raw reply ${show(raw)}`);
  return r;
}

async function generateStream() {
  const whole = await ollama.generate({ model, prompt: 'Once upon', options: greedy(8) });
  const s = await readStream(await ollama.generate({ model, prompt: 'Once upon', options: greedy(8), stream: true }), false);
  check(s.content === whole.response, `streamed text ${show(s.content)} differs from the whole answer ${show(whole.response)}`);
}

async function list() {
  const r = await ollama.list();
  check(Array.isArray(r.models), `models is ${show(r.models)}`);
  const m = r.models.find((x) => x.name === model);
  check(m, `${model} not in ${show(r.models.map((x) => x.name))}`);
  check(m.model === model && m.size > 0 && typeof m.digest === 'string' && m.digest, `entry ${show(m)}`);
  checkTime(m.modified_at, 'modified_at');
  check(m.details?.format === 'gguf' && m.details.family && m.details.parameter_size && m.details.quantization_level,
    `details ${show(m.details)}`);
  check(r.models.some((x) => x.name === env.embedModel), `${env.embedModel} not listed`);
}

async function showCase() {
  const r = await ollama.show({ model });
  check(r.details?.format === 'gguf' && r.details.family, `details ${show(r.details)}`);
  check(r.details.quantization_level === 'Q8_0', `quantization_level ${show(r.details.quantization_level)}`);
  check(Array.isArray(r.capabilities) && r.capabilities.includes('completion'), `capabilities ${show(r.capabilities)}`);
  const ctx = r.model_info?.[`${r.details.family}.context_length`];
  check(Number.isInteger(ctx) && ctx > 0, `model_info context_length is ${show(ctx)}`);
  check(typeof r.parameters === 'string' && r.parameters.includes('num_ctx'), `parameters ${show(r.parameters)}`);
  // "NAME:latest" is NAME, as in Ollama.
  const tagged = await ollama.show({ model: `${model}:latest` });
  check(tagged.details.family === r.details.family, 'NAME:latest is not NAME');
  const e = await ollama.show({ model: env.embedModel });
  check(show(e.capabilities) === '["embedding"]', `embedding model capabilities ${show(e.capabilities)}`);
}

async function ps() {
  const r = await ollama.ps();
  const m = r.models?.find((x) => x.name === model);
  check(m, `${model} not running: ${show(r)}`);
  check(m.size > 0 && Number.isInteger(m.size_vram) && m.details?.format === 'gguf', `entry ${show(m)}`);
  checkTime(m.expires_at, 'expires_at');
}

async function version() {
  const r = await ollama.version();
  check(/^\d+\.\d+\.\d+$/.test(r.version), `version is ${show(r.version)}`);
}

function checkUnit(v, dims, where) {
  check(Array.isArray(v) && v.length === dims && dims > 0, `${where} has ${v?.length} dimensions`);
  const norm = Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  check(Math.abs(norm - 1) < 1e-3, `${where} norm is ${norm}`);
}

async function embed() {
  const r = await ollama.embed({ model: env.embedModel, input: ['the first text', 'a second one'] });
  check(r.model === env.embedModel, `model is ${show(r.model)}`);
  check(Array.isArray(r.embeddings) && r.embeddings.length === 2, `embeddings is ${show(r.embeddings)}`);
  const dims = r.embeddings[0].length;
  r.embeddings.forEach((v, i) => checkUnit(v, dims, `embeddings[${i}]`));
  check(r.prompt_eval_count > 0, `prompt_eval_count is ${r.prompt_eval_count}`);
  const one = await ollama.embed({ model: env.embedModel, input: 'the first text' });
  check(one.embeddings.length === 1, `one input gave ${one.embeddings.length} vectors`);
  const old = await ollama.embeddings({ model: env.embedModel, prompt: 'the first text' });
  checkUnit(old.embedding, dims, 'embedding');
}

async function tools() {
  const r = await ollama.chat({ model, messages: askWeather, tools: [weatherTool], options: greedy(64) });
  checkResponse(r, 'reply', { done: true });
  checkMessage(r.message, 'message');
  checkToolCalls(r.message.tool_calls, 'message.tool_calls');
  const s = await readStream(await ollama.chat({ model, messages: askWeather, tools: [weatherTool], options: greedy(64), stream: true }), true);
  const fns = (calls) => show((calls ?? []).map((c) => c.function));  // ids are new on every request
  check(fns(s.calls) === fns(r.message.tool_calls), `streamed calls ${fns(s.calls)} differ from ${fns(r.message.tool_calls)}`);
  // The answer to a call goes back as Ollama sends it: object arguments, tool_name.
  const next = await ollama.chat({
    model, tools: [weatherTool], options: greedy(16),
    messages: [
      ...askWeather,
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: '{"temp_c": 21, "sunny": true}', tool_name: 'get_weather' },
    ],
  });
  checkResponse(next, 'tool result reply', { done: true });
  checkToolCalls(next.message.tool_calls, 'tool result reply tool_calls');
}

async function format() {
  const r = await ollama.chat({
    model, messages: [{ role: 'user', content: 'Report the weather as JSON.' }], format: reportSchema, options: greedy(64),
  });
  checkResponse(r, 'reply', { done: true });
  check(r.done_reason === 'stop', `done_reason is ${show(r.done_reason)} (content ${show(r.message.content)})`);
  checkSchema(parseJson(r.message.content, 'content'), reportSchema, 'content');
  const g = await ollama.generate({ model, prompt: 'Report the weather as JSON.', format: reportSchema, options: greedy(64) });
  check(g.done_reason === 'stop', `generate done_reason is ${show(g.done_reason)}`);
  checkSchema(parseJson(g.response, 'response'), reportSchema, 'response');
}

function checkNoThinkTags(text, where) {
  check(!/<\/?think>/.test(text ?? ''), `${where} carries think tags: ${show(text)}`);
}

async function think() {
  const r = await ollama.chat({ model, messages: hello, think: true, options: greedy(48) });
  checkResponse(r, 'reply', { done: true });
  checkMessage(r.message, 'message');
  checkNoThinkTags(r.message.content, 'content');
  checkNoThinkTags(r.message.thinking, 'thinking');
  const s = await readStream(await ollama.chat({ model, messages: hello, think: true, options: greedy(48), stream: true }), true);
  checkNoThinkTags(s.content, 'streamed content');
  checkNoThinkTags(s.thinking, 'streamed thinking');
  check(s.content === r.message.content, `streamed content ${show(s.content)} differs from ${show(r.message.content)}`);
  const off = await ollama.generate({ model, prompt: 'Say hello.', think: false, options: greedy(16) });
  check(off.thinking === undefined, `think:false still thought: ${show(off.thinking)}`);
  checkNoThinkTags(off.response, 'response');
}

// The client throws ResponseError (not exported) with the server's status and {"error"} text.
async function expectError(promise, status, re) {
  try {
    await promise;
  } catch (e) {
    check(e?.name === 'ResponseError' && e.status_code === status,
      `got ${e?.name} ${e?.status_code} (${show(e?.message)}), want ResponseError ${status}`);
    if (re) check(re.test(e.message), `message ${show(e.message)} does not match ${re}`);
    return;
  }
  throw new Error(`the request succeeded, want HTTP ${status}`);
}

async function errors() {
  await expectError(ollama.chat({ model, messages: hello, options: { frobnicate: 1 } }), 400, /options\.frobnicate/);
  await expectError(ollama.chat({ model, messages: hello, options: { mirostat: 2 } }), 400, /options\.mirostat/);
  await expectError(ollama.chat({ model, messages: hello, stream: true, options: { num_gpu: 1 } }), 400, /options\.num_gpu/);
  await expectError(ollama.chat({ model: 'no-such-model', messages: hello }), 404, /not found/);
  await expectError(ollama.generate({ model: 'no-such-model', prompt: 'x', stream: true }), 404, /not found/);
  const broken = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };
  await expectError(ollama.chat({ model, messages: hello, format: broken, options: greedy(8) }), 400, /schema/);
  await expectError(ollama.chat({ model, messages: hello, format: broken, options: greedy(8), stream: true }), 400, /schema/);
  await expectError(ollama.chat({ model, messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }), 400, /images/);
  await expectError(ollama.generate({ model, prompt: 'x', suffix: 'y' }), 400, /suffix/);
  await expectError(ollama.embed({ model, input: 'x' }), 400, /embedding_models/);
  await expectError(ollama.chat({ model: env.embedModel, messages: hello }), 400, /embeddings/);
  const wrong = new Ollama({ host, headers: { Authorization: 'Bearer wrong-key-0123456789' } });
  await expectError(wrong.list(), 401);
  // Model management (the test runs as root, an administrator): what llmd refuses, and why.
  await expectError(ollama.pull({ model: 'llama3' }), 400, /hf\.co\/owner\/repo/);
  await expectError(ollama.delete({ model }), 400, /config/);
  await expectError(ollama.copy({ source: model, destination: 'other' }), 404, /models directories/);
  await expectError(ollama.create({ model: '../escape', from: model }), 400, /\.\./);
  await expectError(ollama.push({ model }), 501, /push/);
}

// Model management through the client's own calls: pull (its progress stream) from the test's
// loopback server (LLMD_PULL_URL), create with SYSTEM and PARAMETER, copy, delete, and the
// models in list and ps.
async function manage() {
  const url = process.env.LLMD_PULL_URL;
  check(url, 'set LLMD_PULL_URL');
  const names = async () => (await ollama.list()).models.map((m) => m.name);
  const statuses = [];
  let whole = false;
  for await (const p of await ollama.pull({ model: url, stream: true })) {
    statuses.push(p.status);
    if (p.total > 0 && p.completed === p.total) whole = true;
  }
  check(statuses[0] === 'pulling manifest', `the pull began with ${show(statuses[0])}`);
  check(statuses.at(-1) === 'success', `the pull ended with ${show(statuses.at(-1))}: ${show(statuses)}`);
  check(whole, `no progress line had completed === total: ${show(statuses)}`);
  check((await names()).includes('js-pulled'), `js-pulled not listed: ${show(await names())}`);
  const again = await ollama.pull({ model: url });  // not streamed: the last line
  check(again.status === 'success', `a second pull answered ${show(again)}`);

  const created = await ollama.create({ model: 'js-terse', from: 'js-pulled', system: 'Be terse.',
    parameters: { num_predict: 2 } });
  check(created.status === 'success', `create answered ${show(created)}`);
  const r = await ollama.generate({ model: 'js-terse', prompt: 'Hello', options: { temperature: 0 } });
  check(r.eval_count === 2, `js-terse generated ${r.eval_count} tokens; its PARAMETER num_predict is 2`);
  const running = (await ollama.ps()).models.map((m) => m.name);
  check(running.includes('js-terse'), `js-terse not in ps: ${show(running)}`);

  check((await ollama.copy({ source: 'js-pulled', destination: 'js-copy' })).status === 'success', 'copy');
  check((await names()).includes('js-copy'), `js-copy not listed: ${show(await names())}`);
  check((await ollama.delete({ model: 'js-copy' })).status === 'success', 'delete');
  check(!(await names()).includes('js-copy'), `js-copy still listed after delete: ${show(await names())}`);
  await expectError(ollama.delete({ model: 'js-copy' }), 404, /not found/);
}

// The chat model's generated tokens so far, from /metrics.
async function generatedTokens() {
  const page = await (await fetch(`${host}/metrics`, { headers: auth })).text();
  const m = page.match(new RegExp(`^llmd_generated_tokens_total\\{model="${model}"\\} (\\d+)$`, 'm'));
  check(m, `no llmd_generated_tokens_total for ${model} in /metrics`);
  return Number(m[1]);
}

// A client that leaves mid-stream: its generation is cancelled (it stops well short of its
// 256 tokens) and the next request is served.
async function abort() {
  const before = await generatedTokens();
  const stream = await ollama.chat({ model, messages: hello, options: greedy(256), stream: true });
  let parts = 0;
  let done = false;
  let threw = null;
  try {
    for await (const part of stream) {
      done ||= part.done;
      if (++parts === 2) ollama.abort();
    }
  } catch (e) {
    threw = e;
  }
  check(!done, `the stream finished after ${parts} parts, before the client left`);
  check(threw?.name === 'AbortError', `the aborted stream ended with ${show(threw?.name ?? 'no error')}: ${show(threw?.message)}`);
  const r = await chat({ again: true });
  check(r.done, 'the request after the abort did not finish');
  const spent = (await generatedTokens()) - before;
  check(spent < 128 + r.eval_count, `${spent} tokens generated: the aborted request was not cancelled`);
}

await runCases('ollama', {
  chat, chat_stream: chatStream, generate, generate_stream: generateStream, list, show: showCase, ps, version,
  embed, tools, format, think, errors, abort, manage,
});
