// LangChain's ChatOpenAI (`@langchain/openai` + `@langchain/core`, pinned in package.json),
// unchanged, against llmd. Run by langchain_client_test.cc; see common.mjs for the environment
// and the output format.
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

import { check, checkSchema, env, reportSchema, runCases, show, weatherParams } from './common.mjs';

function chatModel(more = {}) {
  return new ChatOpenAI({
    model: env.model, apiKey: env.apiKey, configuration: { baseURL: env.baseURL },
    temperature: 0, maxTokens: 16, maxRetries: 0, ...more,
  });
}

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  schema: z.object({ city: z.enum(['Paris', 'Rome']) }).strict(),
};
const Report = z.object({ city: z.enum(['Paris', 'Rome']), temp_c: z.number().int().min(-20).max(40), sunny: z.boolean() });

async function invoke() {
  const m = await chatModel().invoke('Say hello.');
  check(typeof m.content === 'string', `content is ${show(m.content)}`);
  check(['stop', 'length'].includes(m.response_metadata?.finish_reason), `finish_reason is ${show(m.response_metadata?.finish_reason)}`);
  check(m.usage_metadata?.output_tokens > 0, `usage_metadata is ${show(m.usage_metadata)}`);
}

async function stream() {
  let text = '';
  let chunks = 0;
  let usage = null;
  for await (const chunk of await chatModel().stream('Say hello.')) {
    chunks++;
    check(typeof chunk.content === 'string', `chunk content is ${show(chunk.content)}`);
    text += chunk.content;
    if (chunk.usage_metadata) usage = chunk.usage_metadata;
  }
  check(chunks >= 1, 'no chunks');
  check(usage?.output_tokens > 0, `usage_metadata is ${show(usage)} (stream_options.include_usage)`);
  check(typeof text === 'string', 'text');
}

function checkWeatherCalls(m) {
  const calls = m.tool_calls;
  check(Array.isArray(calls) && calls.length >= 1,
    `tool_calls is ${show(calls)} (invalid_tool_calls ${show(m.invalid_tool_calls)}, content ${show(m.content)})`);
  check(calls[0].name === 'get_weather', `tool_calls[0].name is ${show(calls[0].name)}`);
  check(typeof calls[0].id === 'string' && calls[0].id, `tool_calls[0].id is ${show(calls[0].id)}`);
  checkSchema(calls[0].args, weatherParams, 'tool_calls[0].args');
}

async function bindToolsInvoke() {
  const m = await chatModel({ maxTokens: 64 }).bindTools([weatherTool], { tool_choice: 'get_weather' })
    .invoke('What is the weather in Paris?');
  checkWeatherCalls(m);
}

async function bindToolsStream() {
  let whole = null;
  const s = await chatModel({ maxTokens: 64 }).bindTools([weatherTool], { tool_choice: 'get_weather' })
    .stream('What is the weather in Paris?');
  for await (const chunk of s) whole = whole === null ? chunk : whole.concat(chunk);
  check(whole !== null, 'no chunks');
  checkWeatherCalls(whole);
}

// A second turn: the assistant's tool call and the tool's result in the history.
async function toolResultTurn() {
  const m = await chatModel({ maxTokens: 32 }).bindTools([weatherTool]).invoke([
    new HumanMessage('What is the weather in Paris?'),
    new AIMessage({ content: '', tool_calls: [{ id: 'call_0', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' }] }),
    new ToolMessage({ tool_call_id: 'call_0', content: '{"temp_c": 21}' }),
  ]);
  check(typeof m.content === 'string', `content is ${show(m.content)}`);
  check(['stop', 'length', 'tool_calls'].includes(m.response_metadata?.finish_reason),
    `finish_reason is ${show(m.response_metadata?.finish_reason)}`);
}

async function structuredOutput() {
  const r = await chatModel({ maxTokens: 64 }).withStructuredOutput(Report, { name: 'report', method: 'jsonSchema', strict: true })
    .invoke('Report the weather.');
  checkSchema(r, reportSchema, 'structured output');
}

async function responsesInvoke() {
  const m = await chatModel({ useResponsesApi: true }).invoke('Say hello.');
  check(typeof m.text === 'string', `text is ${show(m.text)}`);
}

await runCases('langchain', {
  invoke, stream, bind_tools: bindToolsInvoke, bind_tools_stream: bindToolsStream, tool_result_turn: toolResultTurn,
  structured_output: structuredOutput, responses_invoke: responsesInvoke,
});
