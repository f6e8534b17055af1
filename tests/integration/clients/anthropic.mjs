// The official `@anthropic-ai/sdk` npm client (pinned in package.json), unchanged, against
// llmd's Anthropic Messages API. Run by anthropic_client_test.cc; see common.mjs for the
// environment and the output format.
import Anthropic from '@anthropic-ai/sdk';

import { check, checkSchema, env, runCases, show, timeParams, weatherParams } from './common.mjs';

// The SDK adds /v1/messages itself: its base URL is the server's root.
const baseURL = env.baseURL.replace(/\/v1\/?$/, '');
const client = new Anthropic({ baseURL, apiKey: env.apiKey, maxRetries: 0 });
const model = env.model;
const hello = [{ role: 'user', content: 'Say hello.' }];

const weatherTool = { name: 'get_weather', description: 'Current weather in a city', input_schema: weatherParams };
const timeTool = { name: 'get_time', description: 'Current time in a zone', input_schema: timeParams };
const toolSchemas = { get_weather: weatherParams, get_time: timeParams };
const askWeather = [{ role: 'user', content: 'What is the weather in Paris?' }];

const stopReasons = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'refusal', 'model_context_window_exceeded'];

function checkMessage(m, what = 'message') {
  check(m.type === 'message', `${what}.type is ${show(m.type)}`);
  check(typeof m.id === 'string' && m.id.startsWith('msg_'), `${what}.id is ${show(m.id)}`);
  check(m.role === 'assistant', `${what}.role is ${show(m.role)}`);
  check(m.model === model, `${what}.model is ${show(m.model)}`);
  check(Array.isArray(m.content), `${what}.content is ${show(m.content)}`);
  check(stopReasons.includes(m.stop_reason), `${what}.stop_reason is ${show(m.stop_reason)}`);
  check(m.stop_sequence === null || typeof m.stop_sequence === 'string', `${what}.stop_sequence is ${show(m.stop_sequence)}`);
  const u = m.usage;
  check(Number.isInteger(u?.input_tokens) && Number.isInteger(u.output_tokens) && Number.isInteger(u.cache_read_input_tokens),
    `${what}.usage is ${show(u)}`);
  check(u.input_tokens + u.cache_read_input_tokens > 0, `${what}.usage counts no prompt: ${show(u)}`);
  m.content.forEach((b, i) => {
    const where = `${what}.content[${i}]`;
    if (b.type === 'text') check(typeof b.text === 'string' && b.text.length > 0, `${where}.text is ${show(b.text)}`);
    else if (b.type === 'thinking') check(typeof b.thinking === 'string' && typeof b.signature === 'string', `${where} is ${show(b)}`);
    else if (b.type === 'tool_use') check(typeof b.id === 'string' && b.id.startsWith('toolu_'), `${where}.id is ${show(b.id)}`);
    else throw new Error(`${where} has type ${show(b.type)}`);
  });
}

const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

// The tool_use blocks: names among `allowed`, inputs following their schemas.
function checkToolUses(m, allowed, { required }) {
  const uses = m.content.filter((b) => b.type === 'tool_use');
  if (required) {
    check(m.stop_reason === 'tool_use', `stop_reason is ${show(m.stop_reason)}, want "tool_use" (content ${show(m.content)})`);
    check(uses.length >= 1, `no tool_use block in ${show(m.content)}`);
  }
  uses.forEach((u, i) => {
    check(allowed.includes(u.name), `tool_use[${i}].name is ${show(u.name)}, not one of ${show(allowed)}`);
    checkSchema(u.input, toolSchemas[u.name], `tool_use[${i}].input`);
  });
  return uses;
}

async function messages() {
  const m = await client.messages.create({ model, max_tokens: 8, messages: hello, temperature: 0 });
  checkMessage(m);
  check(['end_turn', 'max_tokens'].includes(m.stop_reason), `stop_reason is ${show(m.stop_reason)}`);
  check(m.usage.output_tokens > 0 && m.usage.output_tokens <= 8, `usage is ${show(m.usage)}`);
  return m;
}

// client.messages.stream and its finalMessage(): the SDK builds the Message from the events.
async function messagesStream() {
  const whole = await messages();
  const stream = client.messages.stream({ model, max_tokens: 8, messages: hello, temperature: 0 });
  const types = [];
  let streamed = '';
  stream.on('streamEvent', (ev) => types.push(ev.type));
  stream.on('text', (delta) => { streamed += delta; });
  const m = await stream.finalMessage();
  checkMessage(m, 'finalMessage');
  check(types[0] === 'message_start' && types.at(-1) === 'message_stop', `events ${show(types)}`);
  check(types.includes('message_delta'), `no message_delta in ${show(types)}`);
  check(text(m) === text(whole), `streamed text ${show(text(m))} differs from the whole answer ${show(text(whole))}`);
  check(streamed === text(m), `the text events ${show(streamed)} differ from the final text ${show(text(m))}`);
  check(m.stop_reason === whole.stop_reason, `stop_reason ${show(m.stop_reason)}, whole ${show(whole.stop_reason)}`);
  check(m.usage.output_tokens === whole.usage.output_tokens, `stream usage is ${show(m.usage)}, whole ${show(whole.usage)}`);
  check(m.usage.cache_read_input_tokens > 0, `the repeated prompt was not cached: ${show(m.usage)}`);
}

// A stop sequence taken from the greedy answer itself: the same request with it stops there,
// says which one, and the text ends before it (streamed or not).
async function stopSequences() {
  const whole = text(await client.messages.create({ model, max_tokens: 16, messages: hello, temperature: 0 }));
  const chars = Array.from(whole);
  check(chars.length >= 4, `the greedy answer ${show(whole)} is too short to take a stop sequence from`);
  const mid = Math.floor(chars.length / 2);
  const stop = chars.slice(mid, mid + 2).join('');
  const want = whole.slice(0, whole.indexOf(stop));
  const params = { model, max_tokens: 16, messages: hello, temperature: 0, stop_sequences: ['never-generated', stop] };
  const m = await client.messages.create(params);
  checkMessage(m);
  check(m.stop_reason === 'stop_sequence' && m.stop_sequence === stop,
    `stop_reason ${show(m.stop_reason)}, stop_sequence ${show(m.stop_sequence)}, want ${show(stop)}`);
  check(text(m) === want, `text ${show(text(m))}, want ${show(want)} (the answer before ${show(stop)})`);
  const s = await client.messages.stream(params).finalMessage();
  check(s.stop_reason === 'stop_sequence' && s.stop_sequence === stop,
    `streamed stop_reason ${show(s.stop_reason)}, stop_sequence ${show(s.stop_sequence)}`);
  check(text(s) === want, `streamed text ${show(text(s))}, want ${show(want)}`);
}

// A random-weight model never decides to stop calling: with one call allowed the grammar ends
// the reply after it.
async function toolNamed() {
  const m = await client.messages.create({
    model, max_tokens: 64, temperature: 0, messages: askWeather, tools: [weatherTool, timeTool],
    tool_choice: { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
  });
  checkMessage(m);
  const uses = checkToolUses(m, ['get_time'], { required: true });
  check(uses.length === 1, `${uses.length} tool_use blocks despite disable_parallel_tool_use`);
}

async function toolsAny() {
  const m = await client.messages.create({
    model, max_tokens: 64, temperature: 0, messages: askWeather, tools: [weatherTool, timeTool],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
  });
  checkMessage(m);
  checkToolUses(m, ['get_weather', 'get_time'], { required: true });
}

// The input arrives as input_json_delta fragments; the SDK parses them into the block's input.
async function toolsAnyStream() {
  const stream = client.messages.stream({
    model, max_tokens: 64, temperature: 0, messages: askWeather, tools: [weatherTool, timeTool],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
  });
  let fragments = '';
  stream.on('inputJson', (delta) => { fragments += delta; });
  const m = await stream.finalMessage();
  checkMessage(m, 'finalMessage');
  const uses = checkToolUses(m, ['get_weather', 'get_time'], { required: true });
  check(JSON.stringify(JSON.parse(fragments)) === JSON.stringify(uses[0].input),
    `input_json_delta fragments ${show(fragments)} are not the input ${show(uses[0].input)}`);
}

async function toolResultTurn() {
  const m = await client.messages.create({
    model, max_tokens: 32, temperature: 0, tools: [weatherTool],
    messages: [
      ...askWeather,
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_0', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_0', content: '{"temp_c": 21, "sunny": true}' }] },
    ],
  });
  checkMessage(m);
  checkToolUses(m, ['get_weather'], { required: false });
}

function checkNoThinkTags(m, what) {
  for (const b of m.content) {
    if (b.type === 'text') check(!/<\/?think>/.test(b.text), `${what} text block carries think tags: ${show(b.text)}`);
    if (b.type === 'thinking') check(!/<\/?think>/.test(b.thinking), `${what} thinking carries think tags: ${show(b.thinking)}`);
  }
  const kinds = m.content.map((b) => b.type);
  check(kinds.indexOf('thinking') <= 0, `the thinking block is not first: ${show(kinds)}`);
}

// Qwen3's thinking switch. budget_tokens is no separate limit: thinking counts against max_tokens.
const thinking = { type: 'enabled', budget_tokens: 32 };

async function thinkingCase() {
  const m = await client.messages.create({ model, max_tokens: 48, temperature: 0, messages: hello, thinking });
  checkMessage(m);
  checkNoThinkTags(m, 'message');
}

async function thinkingStream() {
  const m = await client.messages.stream({ model, max_tokens: 48, temperature: 0, messages: hello, thinking }).finalMessage();
  checkMessage(m, 'finalMessage');
  checkNoThinkTags(m, 'finalMessage');
}

// The prompt's tokens as the model sees them: what a Message reports as its input.
async function countTokens() {
  const plain = await client.messages.countTokens({ model, messages: hello });
  check(Number.isInteger(plain.input_tokens) && plain.input_tokens > 0, `input_tokens is ${show(plain.input_tokens)}`);
  const m = await client.messages.create({ model, max_tokens: 1, messages: hello, temperature: 0 });
  const used = m.usage.input_tokens + m.usage.cache_read_input_tokens;
  check(plain.input_tokens === used, `count_tokens says ${plain.input_tokens}, the message used ${used}`);
  const more = await client.messages.countTokens({
    model, messages: hello, system: 'You are terse.', tools: [weatherTool],
  });
  check(more.input_tokens > plain.input_tokens, `with a system prompt and a tool: ${more.input_tokens} <= ${plain.input_tokens}`);
}

async function expectError(promise, Class, status, re) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof Class && e.status === status, `got ${e?.constructor?.name} ${e?.status}, want ${Class.name} ${status}`);
    check(e.error?.type === 'error' && typeof e.error?.error?.type === 'string', `error body is ${show(e.error)}`);
    if (re) check(re.test(e.message), `message ${show(e.message)} does not match ${re}`);
    return;
  }
  throw new Error(`the request succeeded, want ${Class.name} ${status}`);
}

async function errors() {
  await expectError(client.messages.create({ model: 'no-such-model', max_tokens: 4, messages: hello }),
    Anthropic.NotFoundError, 404, /no-such-model/);
  await expectError(client.messages.create({ model, max_tokens: 4, messages: hello, temperature: 5 }),
    Anthropic.BadRequestError, 400, /temperature/);
  await expectError(client.messages.create({
    model, max_tokens: 4,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }],
  }), Anthropic.BadRequestError, 400, /text only/);
  await expectError(client.messages.countTokens({ model: 'no-such-model', messages: hello }), Anthropic.NotFoundError, 404);
  const wrong = new Anthropic({ baseURL, apiKey: 'wrong-key-0123456789', maxRetries: 0 });
  await expectError(wrong.messages.create({ model, max_tokens: 4, messages: hello }), Anthropic.AuthenticationError, 401);
}

await runCases('anthropic', {
  messages, messages_stream: messagesStream, stop_sequences: stopSequences,
  tool_named: toolNamed, tools_any: toolsAny, tools_any_stream: toolsAnyStream, tool_result_turn: toolResultTurn,
  thinking: thinkingCase, thinking_stream: thinkingStream,
  count_tokens: countTokens, errors,
});
