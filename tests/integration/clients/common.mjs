// Shared by the client scripts: the case runner and the few checks they all make.
//
// Environment (set by the *_client_test gtests, tests/integration/clients/run_client.h):
//   LLMD_BASE_URL      e.g. http://127.0.0.1:PORT/v1
//   LLMD_API_KEY       the daemon's API key
//   LLMD_MODEL         the served model's name (default tiny-q8_0)
//   LLMD_EMBED_MODEL   the model the embeddings cases ask for (default LLMD_MODEL)
//   LLMD_CLIENT_CASES  comma-separated case names to run, in order; an unknown name fails
//   LLMD_CASE_TIMEOUT_MS  per-case liveness limit (default 300000: a sanitizer build on a busy
//                         machine is slow; nothing here is a speed claim)
//
// Output: one line per case, `PASS <name>` or `FAIL <name>: <reason>`, then a summary line
// `<library>: N passed, M failed` (with the failed names). Exit status 1 when any case failed,
// 2 when the configuration is wrong.

export const env = {
  baseURL: process.env.LLMD_BASE_URL,
  apiKey: process.env.LLMD_API_KEY,
  model: process.env.LLMD_MODEL || 'tiny-q8_0',
  embedModel: process.env.LLMD_EMBED_MODEL || process.env.LLMD_MODEL || 'tiny-q8_0',
};
// Checked before the scripts build their clients (which throw without a key).
if (!env.baseURL || !env.apiKey) {
  console.log('FAIL config: set LLMD_BASE_URL and LLMD_API_KEY');
  process.exit(2);
}

// A bounded tool: one enum argument, so even a random-weight model finishes the call.
export const weatherParams = {
  type: 'object',
  properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } },
  required: ['city'],
  additionalProperties: false,
};
export const timeParams = {
  type: 'object',
  properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } },
  required: ['zone'],
  additionalProperties: false,
};
// A bounded object: enum, small integer range, boolean.
export const reportSchema = {
  type: 'object',
  properties: {
    city: { type: 'string', enum: ['Paris', 'Rome'] },
    temp_c: { type: 'integer', minimum: -20, maximum: 40 },
    sunny: { type: 'boolean' },
  },
  required: ['city', 'temp_c', 'sunny'],
  additionalProperties: false,
};

export class CheckError extends Error {}

export function check(cond, what) {
  if (!cond) throw new CheckError(what);
}

export function show(v, max = 160) {
  let s;
  try {
    s = JSON.stringify(v);
  } catch {
    s = String(v);
  }
  if (s === undefined) s = String(v);
  return s.length > max ? s.slice(0, max) + '...' : s;
}

// Checks `value` against the JSON Schema subset the cases use (type, enum, minimum, maximum,
// properties, required, additionalProperties: false, items). Throws a CheckError naming the path.
export function checkSchema(value, schema, path = '$') {
  const type = schema.type;
  const is = {
    object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
    array: (v) => Array.isArray(v),
    string: (v) => typeof v === 'string',
    integer: (v) => Number.isInteger(v),
    number: (v) => typeof v === 'number' && Number.isFinite(v),
    boolean: (v) => typeof v === 'boolean',
    null: (v) => v === null,
  };
  if (type !== undefined) check(is[type](value), `${path} is ${show(value)}, not of type ${type}`);
  if (schema.enum) check(schema.enum.includes(value), `${path} is ${show(value)}, not one of ${show(schema.enum)}`);
  if (schema.minimum !== undefined) check(value >= schema.minimum, `${path} is ${value} < minimum ${schema.minimum}`);
  if (schema.maximum !== undefined) check(value <= schema.maximum, `${path} is ${value} > maximum ${schema.maximum}`);
  if (type === 'object') {
    for (const key of schema.required ?? []) check(key in value, `${path} lacks required "${key}"`);
    for (const [key, v] of Object.entries(value)) {
      const sub = schema.properties?.[key];
      if (sub) checkSchema(v, sub, `${path}.${key}`);
      else check(schema.additionalProperties !== false, `${path} has unexpected property "${key}"`);
    }
  }
  if (type === 'array' && schema.items) value.forEach((v, i) => checkSchema(v, schema.items, `${path}[${i}]`));
}

// JSON.parse with the text in the error.
export function parseJson(text, what) {
  check(typeof text === 'string', `${what} is ${show(text)}, not a string`);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CheckError(`${what} is not JSON (${e.message}): ${show(text)}`);
  }
}

// Null when `text` is a prefix of some JSON text (what a grammar-constrained answer cut off by
// max_tokens must be), else a description of where it stops being one.
export function jsonPrefixError(text) {
  const stack = [];
  let state = 'value';
  let lit = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    const ws = ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';
    const bad = () => `not JSON at offset ${i} (${show(ch)} in state ${state}): ${show(text.slice(Math.max(0, i - 20), i + 20))}`;
    switch (state) {
      case 'string': case 'key_string':
        if (ch === '\\') state += '_escape';
        else if (ch === '"') state = state === 'string' ? 'after' : 'colon';
        else if (ch < ' ') return bad();
        break;
      case 'string_escape': case 'key_string_escape':
        if (!'"\\/bfnrtu'.includes(ch)) return bad();
        state = state.replace('_escape', '');
        break;
      case 'number':
        if (/[0-9eE+\-.]/.test(ch)) break;
        state = 'after';
        i--;
        break;
      case 'literal':
        if (/[a-z]/.test(ch)) {
          lit += ch;
          if (!['true', 'false', 'null'].some((w) => w.startsWith(lit))) return bad();
          break;
        }
        if (!['true', 'false', 'null'].includes(lit)) return bad();
        state = 'after';
        i--;
        break;
      case 'value': case 'value_or_close':
        if (ws) break;
        if (state === 'value_or_close' && ch === ']') { stack.pop(); state = 'after'; break; }
        if (ch === '{') { stack.push('{'); state = 'key_or_close'; } else if (ch === '[') { stack.push('['); state = 'value_or_close'; } else if (ch === '"') state = 'string';
        else if (/[-0-9]/.test(ch)) state = 'number';
        else if ('tfn'.includes(ch)) { state = 'literal'; lit = ch; } else return bad();
        break;
      case 'key_or_close': case 'key':
        if (ws) break;
        if (state === 'key_or_close' && ch === '}') { stack.pop(); state = 'after'; break; }
        if (ch !== '"') return bad();
        state = 'key_string';
        break;
      case 'colon':
        if (ws) break;
        if (ch !== ':') return bad();
        state = 'value';
        break;
      case 'after':
        if (ws) break;
        if (stack.length === 0) return bad();
        if (ch === ',') state = stack.at(-1) === '{' ? 'key' : 'value';
        else if ((ch === '}' && stack.at(-1) === '{') || (ch === ']' && stack.at(-1) === '[')) stack.pop();
        else return bad();
        break;
    }
  }
  return null;
}

// One line describing an error from any of the libraries: HTTP status and the server's message
// where the library kept them.
export function describe(e) {
  if (e instanceof CheckError) return e.message;
  const parts = [];
  const status = e?.status ?? e?.statusCode ?? e?.response?.status ?? e?.cause?.status ?? e?.lc_error_code;
  if (status !== undefined) parts.push(`HTTP ${status}`);
  parts.push(`${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`);
  const body = e?.responseBody ?? e?.cause?.responseBody;
  if (typeof body === 'string' && body && !body.includes(e?.message ?? '')) parts.push(`body ${body}`);
  if (e?.cause && !(e.cause instanceof CheckError) && e.cause.message && !parts.join(' ').includes(e.cause.message)) {
    parts.push(`cause: ${e.cause.message}`);
  }
  const line = parts.join('; ').replace(/\s+/g, ' ');
  return line.length > 600 ? line.slice(0, 600) + '...' : line;
}

// Runs the cases LLMD_CLIENT_CASES names from `cases` ({name: async () => {}}), in order.
export async function runCases(library, cases) {
  const wanted = (process.env.LLMD_CLIENT_CASES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (wanted.length === 0) {
    console.log(`FAIL config: set LLMD_CLIENT_CASES (known: ${Object.keys(cases).join(',')})`);
    process.exit(2);
  }
  const limit = Number(process.env.LLMD_CASE_TIMEOUT_MS || 300000);
  // A library that loses a promise must not take the other cases down with it.
  let stray = null;
  process.on('unhandledRejection', (e) => { stray = e; });
  const failed = [];
  for (const name of wanted) {
    const fn = cases[name];
    if (!fn) {
      console.log(`FAIL ${name}: unknown case (known: ${Object.keys(cases).join(',')})`);
      failed.push(name);
      continue;
    }
    stray = null;
    let timer;
    try {
      await Promise.race([
        fn(),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new CheckError(`timed out after ${limit} ms`)), limit); }),
      ]);
      if (stray) throw stray;
      console.log(`PASS ${name}`);
    } catch (e) {
      console.log(`FAIL ${name}: ${describe(e)}`);
      if (process.env.LLMD_CLIENT_DEBUG) console.log(e);
      failed.push(name);
    } finally {
      clearTimeout(timer);
    }
  }
  const passed = wanted.length - failed.length;
  console.log(`${library}: ${passed} passed, ${failed.length} failed` + (failed.length ? ` (${failed.join(', ')})` : ''));
  // Exit now: a timed-out case may still hold a socket open.
  process.exit(failed.length ? 1 : 0);
}
