// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`, pinned in package.json), unchanged,
// against llmd. Run by ai_sdk_client_test.cc; see common.mjs for the environment and output.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { embedMany, generateObject, generateText, Output, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

import { check, checkSchema, env, reportSchema, runCases, show, weatherParams } from './common.mjs';

// What a user of an OpenAI-compatible server that supports json_schema writes.
const llmd = createOpenAICompatible({
  name: 'llmd', baseURL: env.baseURL, apiKey: env.apiKey, includeUsage: true, supportsStructuredOutputs: true,
});
const model = llmd.chatModel(env.model);
const common = { model, maxRetries: 0, temperature: 0 };
// A random-weight model never decides to stop calling tools: with one call allowed
// (parallel_tool_calls false, copied into the body by the provider) the grammar ends the reply
// after it, so 'required' finishes within the token limit.
const oneCall = { providerOptions: { llmd: { parallel_tool_calls: false } } };

const Report = z.object({ city: z.enum(['Paris', 'Rome']), temp_c: z.number().int().min(-20).max(40), sunny: z.boolean() });
const weather = tool({
  description: 'Current weather in a city',
  inputSchema: z.object({ city: z.enum(['Paris', 'Rome']) }).strict(),
});

function checkFinish(r, allowed) {
  check(allowed.includes(r.finishReason), `finishReason is ${show(r.finishReason)}, want one of ${show(allowed)}`);
}

async function generateTextCase() {
  const r = await generateText({ ...common, prompt: 'Say hello.', maxOutputTokens: 16 });
  check(typeof r.text === 'string', `text is ${show(r.text)}`);
  checkFinish(r, ['stop', 'length']);
  check(r.usage?.outputTokens > 0 && r.usage.outputTokens <= 16, `usage is ${show(r.usage)}`);
}

// Drains fullStream; the SDK reports server errors as 'error' parts, not as throws.
async function drain(result) {
  const parts = [];
  for await (const part of result.fullStream) {
    if (part.type === 'error') throw part.error;
    parts.push(part);
  }
  return parts;
}

async function streamTextCase() {
  const result = streamText({ ...common, prompt: 'Say hello.', maxOutputTokens: 16, onError: () => {} });
  const parts = await drain(result);
  const deltas = parts.filter((p) => p.type === 'text-delta');
  check(deltas.length >= 1, `no text-delta parts in ${show(parts.map((p) => p.type))}`);
  check((await result.text) === deltas.map((p) => p.text).join(''), 'text differs from its deltas');
  check(['stop', 'length'].includes(await result.finishReason), `finishReason is ${show(await result.finishReason)}`);
  const usage = await result.usage;
  check(usage?.outputTokens > 0, `usage is ${show(usage)} (stream_options.include_usage)`);
}

function checkWeatherCalls(calls) {
  check(Array.isArray(calls) && calls.length >= 1, `toolCalls is ${show(calls)}`);
  for (const c of calls) {
    check(c.toolName === 'get_weather', `toolName is ${show(c.toolName)}`);
    check(typeof c.toolCallId === 'string' && c.toolCallId, `toolCallId is ${show(c.toolCallId)}`);
    checkSchema(c.input, weatherParams, 'tool input');
  }
}

async function generateTextTool() {
  const r = await generateText({
    ...common, prompt: 'What is the weather in Paris?', tools: { get_weather: weather }, toolChoice: 'required',
    maxOutputTokens: 64, ...oneCall,
  });
  checkFinish(r, ['tool-calls']);
  checkWeatherCalls(r.toolCalls);
}

async function streamTextTool() {
  const result = streamText({
    ...common, prompt: 'What is the weather in Paris?', tools: { get_weather: weather }, toolChoice: 'required',
    maxOutputTokens: 64, onError: () => {}, ...oneCall,
  });
  await drain(result);
  check((await result.finishReason) === 'tool-calls', `finishReason is ${show(await result.finishReason)}`);
  checkWeatherCalls(await result.toolCalls);
}

// Two steps: the SDK runs the tool and sends its result back (assistant tool_calls + a tool
// message in the history), then the model answers without tools.
async function toolRoundTrip() {
  const r = await generateText({
    ...common, ...oneCall, prompt: 'What is the weather in Paris?', maxOutputTokens: 64,
    tools: { get_weather: tool({ ...weather, execute: async ({ city }) => ({ city, temp_c: 21 }) }) },
    prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
    stopWhen: stepCountIs(2),
  });
  check(r.steps[0].finishReason === 'tool-calls', `step 0 finishReason is ${show(r.steps[0].finishReason)}`);
  checkWeatherCalls(r.steps[0].toolCalls);
  check(r.steps.length === 2, `${r.steps.length} steps, want 2`);
  check(r.steps[0].toolResults.length === r.steps[0].toolCalls.length, `toolResults ${show(r.steps[0].toolResults)}`);
  checkFinish(r, ['stop', 'length']);
  check(typeof r.text === 'string', `text is ${show(r.text)}`);
}

async function generateObjectCase() {
  const r = await generateObject({ ...common, schema: Report, schemaName: 'report', prompt: 'Report the weather.', maxOutputTokens: 64 });
  checkSchema(r.object, reportSchema, 'object');
}

async function outputObject() {
  const r = await generateText({
    ...common, output: Output.object({ schema: Report, name: 'report' }), prompt: 'Report the weather.', maxOutputTokens: 64,
  });
  checkSchema(r.output, reportSchema, 'output');
}

// Qwen3's thinking switch through providerOptions (the provider copies unknown keys into the
// body); the SDK reads message.reasoning_content into reasoningText.
async function reasoning() {
  const result = streamText({
    ...common, prompt: 'Say hello.', maxOutputTokens: 48, onError: () => {},
    providerOptions: { llmd: { chat_template_kwargs: { enable_thinking: true } } },
  });
  await drain(result);
  const text = await result.text;
  const thought = await result.reasoningText;
  check(typeof text === 'string' && !/<\/?think>/.test(text), `text carries think tags: ${show(text)}`);
  check(thought === undefined || (typeof thought === 'string' && !/<\/?think>/.test(thought)), `reasoningText is ${show(thought)}`);
}

async function embedManyCase() {
  const r = await embedMany({ model: llmd.embeddingModel(env.embedModel), values: ['the first text', 'a second one'], maxRetries: 0 });
  check(r.embeddings.length === 2, `${r.embeddings.length} embeddings`);
  const dims = r.embeddings[0].length;
  r.embeddings.forEach((v, i) => {
    check(v.length === dims && dims > 0, `embedding ${i} has ${v.length} dimensions`);
    const norm = Math.sqrt(v.reduce((a, x) => a + x * x, 0));
    check(Math.abs(norm - 1) < 1e-3, `embedding ${i} norm is ${norm}`);
  });
}

await runCases('ai-sdk', {
  generate_text: generateTextCase, stream_text: streamTextCase,
  generate_text_tool: generateTextTool, stream_text_tool: streamTextTool, tool_round_trip: toolRoundTrip,
  generate_object: generateObjectCase, output_object: outputObject, reasoning,
  embed_many: embedManyCase,
});
