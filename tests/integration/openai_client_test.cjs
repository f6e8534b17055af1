// The official `openai` npm client, unchanged, against llmd's TCP listener.
// Run by openai_client_test.cc with LLMD_BASE_URL and LLMD_API_KEY set; exits non-zero on
// the first failed check.
const assert = require('node:assert/strict');
const OpenAI = require('openai');

async function main() {
  const client = new OpenAI({ baseURL: process.env.LLMD_BASE_URL, apiKey: process.env.LLMD_API_KEY, maxRetries: 0 });

  const models = await client.models.list();
  assert.equal(models.data[0].id, 'tiny-q8_0');

  const chat = await client.chat.completions.create({
    model: 'tiny-q8_0', messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 8, temperature: 0,
  });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.equal(chat.usage.completion_tokens, 8);

  const stream = await client.chat.completions.create({
    model: 'tiny-q8_0', messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 8, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) text += chunk.choices[0].delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, chat.choices[0].message.content, 'streamed text equals the whole answer');
  assert.ok(usage.prompt_tokens_details.cached_tokens > 0, 'the repeated prompt was served from the cache');

  const completion = await client.completions.create({ model: 'tiny-q8_0', prompt: 'Once upon', max_tokens: 4 });
  assert.equal(completion.object, 'text_completion');

  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  const wrong = new OpenAI({ baseURL: process.env.LLMD_BASE_URL, apiKey: 'wrong-key-0123456789', maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(
    client.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], temperature: 5 }),
    (e) => e instanceof OpenAI.BadRequestError && /temperature/.test(e.message));

  console.log('openai client: models, chat, streaming chat, completions and errors all ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
