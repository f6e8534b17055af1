// The official `openai` npm client (pinned in package.json), unchanged, against llmd.
// Run by openai_client_test.cc; see common.mjs for the environment and the output format.
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import {
  check, checkSchema, env, jsonPrefixError, parseJson, reportSchema, runCases, show, timeParams, weatherParams,
} from './common.mjs';

const client = new OpenAI({ baseURL: env.baseURL, apiKey: env.apiKey, maxRetries: 0 });
const model = env.model;
const hello = [{ role: 'user', content: 'Say hello.' }];

const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather in a city', parameters: weatherParams },
};
const timeTool = {
  type: 'function',
  function: { name: 'get_time', description: 'Current time in a zone', parameters: timeParams },
};
const toolSchemas = { get_weather: weatherParams, get_time: timeParams };
const askWeather = [{ role: 'user', content: 'What is the weather in Paris?' }];

function checkChatCompletion(r, what = 'reply') {
  check(r.object === 'chat.completion', `${what}.object is ${show(r.object)}`);
  check(typeof r.id === 'string' && r.id, `${what}.id is ${show(r.id)}`);
  check(Array.isArray(r.choices) && r.choices.length >= 1, `${what}.choices is ${show(r.choices)}`);
  check(r.choices[0].message?.role === 'assistant', `${what} message role is ${show(r.choices[0].message?.role)}`);
}

// A tool call as the client returns it (non-stream) or as checkStream assembles it.
function checkToolCall(call, allowed, where) {
  check(typeof call.id === 'string' && call.id.length > 0, `${where}.id is ${show(call.id)}`);
  check(call.type === 'function', `${where}.type is ${show(call.type)}`);
  const name = call.function?.name;
  check(allowed.includes(name), `${where}.function.name is ${show(name)}, not one of ${show(allowed)}`);
  const args = parseJson(call.function.arguments, `${where}.function.arguments`);
  checkSchema(args, toolSchemas[name], `${where} arguments`);
}

function checkToolCalls(choice, allowed, { required }) {
  const calls = choice.message?.tool_calls;
  if (required || choice.finish_reason === 'tool_calls') {
    check(choice.finish_reason === 'tool_calls', `finish_reason is ${show(choice.finish_reason)}, want "tool_calls"`);
    check(Array.isArray(calls) && calls.length >= 1, `message.tool_calls is ${show(calls)}, want at least one call`);
  } else {
    check(['stop', 'length'].includes(choice.finish_reason), `finish_reason is ${show(choice.finish_reason)}`);
  }
  (calls ?? []).forEach((c, i) => checkToolCall(c, allowed, `tool_calls[${i}]`));
}

// Reads a chat stream the way clients do: content and tool-call deltas, merged by index.
async function readChatStream(stream) {
  const out = { content: '', reasoning: '', calls: [], finish: null, usage: null, chunks: 0 };
  for await (const chunk of stream) {
    out.chunks++;
    check(chunk.object === 'chat.completion.chunk', `chunk.object is ${show(chunk.object)}`);
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const d = choice.delta ?? {};
    if (typeof d.content === 'string') out.content += d.content;
    if (typeof d.reasoning_content === 'string') out.reasoning += d.reasoning_content;
    for (const tc of d.tool_calls ?? []) {
      check(Number.isInteger(tc.index), `tool call delta without an integer index: ${show(tc)}`);
      const c = (out.calls[tc.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
      if (tc.id) c.id += tc.id;
      if (tc.type) c.type = tc.type;
      if (tc.function?.name) c.function.name += tc.function.name;
      if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
    }
    if (choice.finish_reason) out.finish = choice.finish_reason;
  }
  check(out.chunks > 0, 'the stream had no chunks');
  return out;
}

function checkStreamedToolCalls(s, allowed, { required }) {
  check(s.calls.every(Boolean), `tool call indices have gaps: ${show(s.calls)}`);
  checkToolCalls({ finish_reason: s.finish, message: { tool_calls: s.calls.length ? s.calls : undefined } }, allowed,
    { required });
}

async function chat() {
  const r = await client.chat.completions.create({ model, messages: hello, max_tokens: 8, temperature: 0 });
  checkChatCompletion(r);
  const c = r.choices[0];
  check(typeof c.message.content === 'string', `content is ${show(c.message.content)}`);
  check(['stop', 'length'].includes(c.finish_reason), `finish_reason is ${show(c.finish_reason)}`);
  check(r.usage?.completion_tokens > 0 && r.usage.completion_tokens <= 8, `usage is ${show(r.usage)}`);
  return r;
}

async function chatStream() {
  const whole = await chat();
  const s = await readChatStream(await client.chat.completions.create({
    model, messages: hello, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
  }));
  check(s.content === whole.choices[0].message.content,
    `streamed text ${show(s.content)} differs from the whole answer ${show(whole.choices[0].message.content)}`);
  check(['stop', 'length'].includes(s.finish), `finish_reason is ${show(s.finish)}`);
  check(s.usage?.completion_tokens === whole.usage.completion_tokens, `stream usage is ${show(s.usage)}`);
  check(s.usage.prompt_tokens_details?.cached_tokens > 0, `the repeated prompt was not cached: ${show(s.usage)}`);
}

async function models() {
  const list = await client.models.list();
  check(list.data.length >= 1, 'no models');
  check(list.data.some((m) => m.id === model && m.object === 'model'), `${model} not in ${show(list.data)}`);
}

async function completions() {
  const r = await client.completions.create({ model, prompt: 'Once upon', max_tokens: 4 });
  check(r.object === 'text_completion', `object is ${show(r.object)}`);
  check(typeof r.choices[0].text === 'string', `text is ${show(r.choices[0].text)}`);
}

async function expectError(promise, Class, status, re) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof Class && e.status === status, `got ${e?.constructor?.name} ${e?.status}, want ${Class.name} ${status}`);
    if (re) check(re.test(e.message), `message ${show(e.message)} does not match ${re}`);
    return;
  }
  throw new Error(`the request succeeded, want ${Class.name} ${status}`);
}

async function errors() {
  await expectError(client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    OpenAI.NotFoundError, 404);
  const wrong = new OpenAI({ baseURL: env.baseURL, apiKey: 'wrong-key-0123456789', maxRetries: 0 });
  await expectError(wrong.models.list(), OpenAI.AuthenticationError, 401);
  await expectError(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], temperature: 5 }),
    OpenAI.BadRequestError, 400, /temperature/);
}

async function toolsAuto() {
  const r = await client.chat.completions.create({
    model, messages: askWeather, tools: [weatherTool], tool_choice: 'auto', max_tokens: 64, temperature: 0,
  });
  checkChatCompletion(r);
  checkToolCalls(r.choices[0], ['get_weather'], { required: false });
}

async function toolsAutoStream() {
  const s = await readChatStream(await client.chat.completions.create({
    model, messages: askWeather, tools: [weatherTool], max_tokens: 64, temperature: 0, stream: true,
  }));
  checkStreamedToolCalls(s, ['get_weather'], { required: false });
}

// A random-weight model never decides to stop calling: with one call allowed the grammar ends
// the reply after it (with parallel calls it would run to max_tokens, finish_reason "length").
async function toolsRequired() {
  const r = await client.chat.completions.create({
    model, messages: askWeather, tools: [weatherTool, timeTool], tool_choice: 'required', parallel_tool_calls: false,
    max_tokens: 64, temperature: 0,
  });
  checkChatCompletion(r);
  checkToolCalls(r.choices[0], ['get_weather', 'get_time'], { required: true });
}

async function toolsRequiredStream() {
  const s = await readChatStream(await client.chat.completions.create({
    model, messages: askWeather, tools: [weatherTool, timeTool], tool_choice: 'required', parallel_tool_calls: false,
    max_tokens: 64, temperature: 0, stream: true, stream_options: { include_usage: true },
  }));
  checkStreamedToolCalls(s, ['get_weather', 'get_time'], { required: true });
}

async function toolNamed() {
  const r = await client.chat.completions.create({
    model, messages: askWeather, tools: [weatherTool, timeTool],
    tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false,
    max_tokens: 64, temperature: 0,
  });
  checkChatCompletion(r);
  checkToolCalls(r.choices[0], ['get_time'], { required: true });
  check(r.choices[0].message.tool_calls.length === 1,
    `${r.choices[0].message.tool_calls.length} calls despite parallel_tool_calls: false`);
}

async function toolResultTurn() {
  const r = await client.chat.completions.create({
    model,
    messages: [
      ...askWeather,
      {
        role: 'assistant', content: null,
        tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_0', content: '{"temp_c": 21, "sunny": true}' },
    ],
    tools: [weatherTool], max_tokens: 32, temperature: 0,
  });
  checkChatCompletion(r);
  checkToolCalls(r.choices[0], ['get_weather'], { required: false });
  check(r.usage?.prompt_tokens > 0, `usage is ${show(r.usage)}`);
}

function checkJsonAnswer(r, schema) {
  checkChatCompletion(r);
  const c = r.choices[0];
  check(c.finish_reason === 'stop', `finish_reason is ${show(c.finish_reason)} (content ${show(c.message.content)})`);
  const v = parseJson(c.message.content, 'content');
  if (schema) checkSchema(v, schema, 'content');
  else check(v !== null && typeof v === 'object' && !Array.isArray(v), `content is ${show(v)}, not a JSON object`);
  return v;
}

async function jsonSchema() {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Report the weather as JSON.' }], max_tokens: 64, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'report', strict: true, schema: reportSchema } },
  });
  checkJsonAnswer(r, reportSchema);
}

// The client's own structured-output helper: a zod schema, parsed by the client.
async function jsonSchemaZod() {
  const Report = z.object({ city: z.enum(['Paris', 'Rome']), temp_c: z.number().int().min(-20).max(40), sunny: z.boolean() });
  const r = await client.chat.completions.parse({
    model, messages: [{ role: 'user', content: 'Report the weather as JSON.' }], max_tokens: 64, temperature: 0,
    response_format: zodResponseFormat(Report, 'report'),
  });
  const m = r.choices[0].message;
  check(m.parsed !== null && typeof m.parsed === 'object', `message.parsed is ${show(m.parsed)} (content ${show(m.content)})`);
  checkSchema(m.parsed, reportSchema, 'parsed');
}

// An unbounded grammar: a random-weight model may fill a string until max_tokens, so an answer
// cut off there must be a JSON object so far (every token kept to the grammar).
async function jsonObject() {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Answer in JSON.' }], max_tokens: 64, temperature: 0,
    response_format: { type: 'json_object' },
  });
  const c = r.choices[0];
  if (c.finish_reason !== 'length') return checkJsonAnswer(r, null);
  checkChatCompletion(r);
  const text = c.message.content;
  check(typeof text === 'string' && /^\s*\{/.test(text), `content cut off by max_tokens does not start an object: ${show(text)}`);
  const e = jsonPrefixError(text);
  check(e === null, `content cut off by max_tokens is ${e}`);
}

async function logprobs() {
  const r = await client.chat.completions.create({
    model, messages: hello, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  checkChatCompletion(r);
  const content = r.choices[0].logprobs?.content;
  check(Array.isArray(content) && content.length >= 1, `choices[0].logprobs.content is ${show(content)}`);
  check(content.length <= r.usage.completion_tokens, `${content.length} logprobs for ${r.usage.completion_tokens} tokens`);
  content.forEach((t, i) => {
    const w = `logprobs.content[${i}]`;
    check(typeof t.token === 'string', `${w}.token is ${show(t.token)}`);
    check(typeof t.logprob === 'number' && t.logprob <= 0, `${w}.logprob is ${show(t.logprob)}`);
    check(t.bytes === null || Array.isArray(t.bytes), `${w}.bytes is ${show(t.bytes)}`);
    check(Array.isArray(t.top_logprobs) && t.top_logprobs.length === 2, `${w}.top_logprobs is ${show(t.top_logprobs)}`);
    for (const alt of t.top_logprobs) {
      check(typeof alt.token === 'string' && typeof alt.logprob === 'number' && alt.logprob <= 0, `${w} alternative ${show(alt)}`);
    }
  });
}

async function n2() {
  const r = await client.chat.completions.create({ model, messages: hello, max_tokens: 8, n: 2, temperature: 0.8, seed: 1 });
  checkChatCompletion(r);
  check(r.choices.length === 2, `${r.choices.length} choices, want 2`);
  r.choices.forEach((c, i) => {
    check(c.index === i, `choices[${i}].index is ${show(c.index)}`);
    check(typeof c.message.content === 'string', `choices[${i}] content is ${show(c.message.content)}`);
  });
  check(r.usage?.completion_tokens > 8 || r.choices.some((c) => c.finish_reason === 'stop'),
    `usage ${show(r.usage)} does not count both choices`);
}

// Qwen3's thinking switch, through the client's pass-through of undocumented body fields.
const thinking = { chat_template_kwargs: { enable_thinking: true } };

function checkNoThinkTags(content, where) {
  check(content === null || typeof content === 'string', `${where} content is ${show(content)}`);
  check(!/<\/?think>/.test(content ?? ''), `${where} content carries think tags: ${show(content)}`);
}

async function reasoning() {
  const r = await client.chat.completions.create({ model, messages: hello, max_tokens: 48, temperature: 0, ...thinking });
  checkChatCompletion(r);
  const m = r.choices[0].message;
  checkNoThinkTags(m.content, 'message');
  check(m.reasoning_content === undefined || m.reasoning_content === null || typeof m.reasoning_content === 'string',
    `reasoning_content is ${show(m.reasoning_content)}`);
  check(!/<\/?think>/.test(m.reasoning_content ?? ''), `reasoning_content carries think tags: ${show(m.reasoning_content)}`);
}

async function reasoningStream() {
  const s = await readChatStream(await client.chat.completions.create({
    model, messages: hello, max_tokens: 48, temperature: 0, stream: true, ...thinking,
  }));
  checkNoThinkTags(s.content, 'streamed');
  check(!/<\/?think>/.test(s.reasoning), `streamed reasoning_content carries think tags: ${show(s.reasoning)}`);
}

async function responses() {
  const r = await client.responses.create({ model, input: 'Say hello.', max_output_tokens: 16, temperature: 0 });
  check(r.object === 'response', `object is ${show(r.object)}`);
  check(['completed', 'incomplete'].includes(r.status), `status is ${show(r.status)}`);
  check(typeof r.output_text === 'string', `output_text is ${show(r.output_text)}`);
  check(Array.isArray(r.output) && r.output.length >= 1, `output is ${show(r.output)}`);
}

async function responsesStream() {
  const stream = await client.responses.create({ model, input: 'Say hello.', max_output_tokens: 16, temperature: 0, stream: true });
  const types = [];
  let text = '';
  let done = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed' || ev.type === 'response.incomplete') done = ev.response;
  }
  check(types[0] === 'response.created', `first event is ${show(types[0])}`);
  check(done !== null, `no response.completed event in ${show([...new Set(types)])}`);
  check(done.output_text === undefined || done.output_text === text || typeof done.output_text === 'string',
    `final output_text ${show(done.output_text)}`);
}

// Stored responses: store, previous_response_id (from the prompt cache), retrieve, input items, delete.
async function responsesStore() {
  const ask = { model, max_output_tokens: 12, temperature: 0 };
  const first = await client.responses.create({ ...ask, input: 'Tell me about rivers.', store: true });
  check(first.store === true, `store is ${show(first.store)}`);
  const next = await client.responses.create({ ...ask, input: 'And lakes?', previous_response_id: first.id });
  check(next.previous_response_id === first.id, `previous_response_id is ${show(next.previous_response_id)}`);
  const cached = next.usage?.input_tokens_details?.cached_tokens;
  check(cached > 0, `cached_tokens is ${show(cached)}`);
  const got = await client.responses.retrieve(first.id);
  check(got.id === first.id && got.output_text === first.output_text, `retrieved ${show(got)}`);
  // The follow-up's input items, one page at a time through the client's own cursor (after).
  const items = [];
  for await (const item of client.responses.inputItems.list(next.id, { limit: 1, order: 'asc' })) items.push(item);
  const texts = items.map((item) => item.content?.[0]?.text);
  check(items.length === 2 + first.output.length && texts[0] === 'Tell me about rivers.' && texts.at(-1) === 'And lakes?',
    `input items ${show(items)}`);
  await client.responses.delete(first.id);
  let status = 0;
  try {
    await client.responses.retrieve(first.id);
  } catch (e) {
    status = e.status;
  }
  check(status === 404, `retrieve after delete gave ${show(status)}`);
}

async function embeddings() {
  const r = await client.embeddings.create({ model: env.embedModel, input: ['the first text', 'a second one'] });
  check(r.object === 'list' && r.data.length === 2, `data is ${show(r.data)}`);
  const dims = r.data[0].embedding.length;
  r.data.forEach((d, i) => {
    check(d.index === i, `data[${i}].index is ${show(d.index)}`);
    check(Array.isArray(d.embedding) && d.embedding.length === dims && dims > 0, `data[${i}] has ${d.embedding?.length} dimensions`);
    const norm = Math.sqrt(d.embedding.reduce((a, x) => a + x * x, 0));
    check(Math.abs(norm - 1) < 1e-3, `data[${i}] norm is ${norm}`);
  });
}

await runCases('openai', {
  models, chat, chat_stream: chatStream, completions, errors,
  tools_auto: toolsAuto, tools_auto_stream: toolsAutoStream,
  tools_required: toolsRequired, tools_required_stream: toolsRequiredStream,
  tool_named: toolNamed, tool_result_turn: toolResultTurn,
  json_schema: jsonSchema, json_schema_zod: jsonSchemaZod, json_object: jsonObject,
  logprobs, n2, reasoning, reasoning_stream: reasoningStream,
  responses, responses_stream: responsesStream, responses_store: responsesStore, embeddings,
});
