#!/usr/bin/env node
// Writes sdk/src/wasm-codes.ts: the numbers the wasm bindings answer with
// and take (event kinds, close kinds, send results, datagram verdicts,
// client states, path events, config fields, channel kinds, the stats
// vector's layout), read from the Rust code that defines them, so the SDK
// never copies a code by hand.
//
//   node sdk/scripts/gen-codes.mjs            rewrite the file
//   node sdk/scripts/gen-codes.mjs --check    exit 1 if the file is stale
//                                             (the SDK's tests run this)
//   --file <path>                             compare or write another file (tests)
//
// The parsing is deliberately narrow: each table comes from one function,
// enum or set of consts, and anything unexpected (a table that comes out
// empty, a variant without a code, a name used twice) fails loudly rather
// than generate a partial table.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = resolve(SDK, '..');
const OUT = join(SDK, 'src', 'wasm-codes.ts');

/** The Rust sources, relative to the repository root. */
export const SOURCES = {
  events: 'wasm/wasm/src/events.rs',
  client: 'wasm/wasm/src/client.rs',
  server: 'wasm/wasm/src/server.rs',
  config: 'wasm/wasm/src/config.rs',
  batch: 'wasm/wasm/src/batch.rs',
  sendError: 'wasm/core/src/error.rs',
  wire: 'wasm/core/src/wire.rs',
};

class GenError extends Error {}
const fail = (msg) => {
  throw new GenError(msg);
};

/** Drops `//` comments (doc comments included) so they cannot match a pattern. */
function stripComments(src) {
  return src.replace(/\/\/[^\n]*/g, '');
}

/** The `{ … }` (or `[ … ]`) block that follows the first match of `head`, brackets balanced. */
function block(src, head, what, [l, r] = '{}') {
  const m = head.exec(src);
  if (!m) fail(`${what}: not found`);
  const open = src.indexOf(l, m.index + m[0].length - 1);
  let depth = 0;
  for (let i = open; open >= 0 && i < src.length; i++) {
    if (src[i] === l) depth++;
    else if (src[i] === r && --depth === 0) return src.slice(open + 1, i);
  }
  return fail(`${what}: unbalanced brackets`);
}

/**
 * A function's body without comments; `flat`: without any whitespace either,
 * so that where rustfmt breaks a match arm never matters.
 */
function fnBody(src, name, what, flat = true) {
  const body = block(stripComments(src), new RegExp(`\\bfn\\s+${name}\\s*\\(`), what);
  return flat ? body.replace(/\s+/g, '') : body;
}

/** Every `pattern` match in `text` as [name, value] (groups 1 and 2). */
function pairs(text, pattern, what, parse = Number) {
  const out = [...text.matchAll(pattern)].map((m) => [m[1], parse(m[2])]);
  if (out.length === 0) fail(`${what}: no entries matched`);
  const names = new Set();
  const values = new Set();
  for (const [n, v] of out) {
    if (names.has(n)) fail(`${what}: ${n} appears twice`);
    if (values.has(v)) fail(`${what}: value ${v} appears twice`);
    names.add(n);
    values.add(v);
  }
  return out;
}

const words = (pascal) => pascal.replace(/([a-z0-9])([A-Z])/g, '$1 $2').split(' ');
const kebab = (pascal) => words(pascal).join('-').toLowerCase();
const screaming = (pascal) => words(pascal).join('_').toUpperCase();
const camel = (pascal) => pascal[0].toLowerCase() + pascal.slice(1);

function tables(read) {
  const events = read('events');
  // Two groups of consts: event kinds, and close kinds (CLOSE_*).
  const constText = stripComments(events);
  const ev = pairs(constText, /pub const ((?!CLOSE_)\w+)\s*:\s*u32\s*=\s*(\d+)\s*;/g, `${SOURCES.events}: event kinds`);
  const closeConsts = new Map(pairs(constText, /pub const (CLOSE_\w+)\s*:\s*u32\s*=\s*(\d+)\s*;/g, `${SOURCES.events}: CLOSE_ consts`));
  // Close kinds are named after the `CloseReason` variant each stands for (`EventSlot::store`).
  const closeOf = pairs(fnBody(events, 'store', `${SOURCES.events}: EventSlot::store`), /CloseReason::(\w+)[^=]*=>\((CLOSE_\w+)/g, `${SOURCES.events}: close kinds`, String);
  const closeKinds = closeOf.map(([variant, c]) => [closeConsts.get(c) ?? fail(`${SOURCES.events}: ${c} is not a pub const`), kebab(variant)]);
  if (closeKinds.length !== closeConsts.size) fail(`${SOURCES.events}: ${closeConsts.size} CLOSE_ consts but ${closeKinds.length} used in EventSlot::store`);

  const client = read('client');
  const sendCodes = new Map(
    pairs(fnBody(read('sendError'), 'code', `${SOURCES.sendError}: SendError::code`), /SendError::(\w+)[^=]*=>"(\w+)"/g, `${SOURCES.sendError}: SendError codes`, String),
  );
  const sendResults = pairs(fnBody(client, 'send_code', `${SOURCES.client}: send_code`), /SendError::(\w+)[^=]*=>\{?(-\d+)/g, `${SOURCES.client}: send_code`).map(([variant, n]) => [
    n,
    sendCodes.get(variant) ?? fail(`${SOURCES.sendError}: SendError::${variant} has no code()`),
  ]);
  if (sendResults.length !== sendCodes.size) fail(`${SOURCES.client}: send_code maps ${sendResults.length} of ${sendCodes.size} SendError variants`);

  const dropBody = fnBody(client, 'drop_code', `${SOURCES.client}: drop_code`);
  const taken = /Ok\(\(\)\)=>\{?(\d+)/.exec(dropBody) ?? fail(`${SOURCES.client}: drop_code has no Ok(()) arm`);
  const datagram = [['TAKEN', Number(taken[1])], ...pairs(dropBody, /DropReason::(\w+)[^=]*=>\{?(\d+)/g, `${SOURCES.client}: drop_code`).map(([v, n]) => [screaming(v), n])];

  const states = pairs(fnBody(client, 'state', `${SOURCES.client}: Client::state`), /State::(\w+)[^=]*=>\{?(\d+)/g, `${SOURCES.client}: Client::state`).map(([v, n]) => [screaming(v), n]);

  const pathBody = fnBody(read('server'), 'poll_path_event', `${SOURCES.server}: poll_path_event`);
  const none = /None=>\{?(\d+)/.exec(pathBody) ?? fail(`${SOURCES.server}: poll_path_event has no None arm`);
  const pathEvents = [['NONE', Number(none[1])], ...pairs(pathBody, /PathEvent::(\w+)[^=]*=>\{?(\d+)/g, `${SOURCES.server}: poll_path_event`).map(([v, n]) => [screaming(v), n])];

  // `enum Field`: variants in order, discriminants implicit (0, 1, …).
  const fieldBody = block(stripComments(read('config')), /\benum\s+Field\s*\{/, `${SOURCES.config}: enum Field`);
  const fields = fieldBody
    .replace(/#\[[^\]]*\]/g, '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((v, i) => {
      if (!/^[A-Z]\w*$/.test(v)) fail(`${SOURCES.config}: enum Field: cannot read variant "${v}" (explicit discriminants or data are not supported)`);
      return [camel(v), i];
    });
  if (fields.length === 0) fail(`${SOURCES.config}: enum Field is empty`);
  const whole = /pub\(crate\) const FEC_WHOLE\s*:\s*u8\s*=\s*(\d+)\s*;/.exec(stripComments(read('config')));
  if (whole === null) fail(`${SOURCES.config}: pub(crate) const FEC_WHOLE: u8 not found`);
  const fecWhole = Number(whole[1]);

  const kindBody = block(stripComments(read('wire')), /\bpub enum ChannelKind\s*\{/, `${SOURCES.wire}: enum ChannelKind`);
  const channelKinds = pairs(kindBody, /(\w+)\s*=\s*(\d+)/g, `${SOURCES.wire}: enum ChannelKind`).map(([v, n]) => [kebab(v), n]);

  // The stats vector: `s.<field>` in order, then per channel `c.<field>` (`stats_vec`).
  const statsBody = fnBody(events, 'stats_vec', `${SOURCES.events}: stats_vec`, false);
  const statsFields = (text, re, what) => {
    const names = [...text.matchAll(re)].map((m) => m[1]);
    if (names.length === 0 || new Set(names).size !== names.length) fail(`${what}: expected distinct fields, got ${names.join(', ') || 'none'}`);
    return names.map((n, i) => [camel(n.replace(/_(\w)/g, (_, c) => c.toUpperCase())), i]);
  };
  const stats = statsFields(block(statsBody, /vec!\s*\[/, `${SOURCES.events}: stats_vec's vec!`, '[]'), /\bs\.(\w+)/g, `${SOURCES.events}: stats_vec`);
  const channelStats = statsFields(block(statsBody, /for\s+c\s+in\s+&s\.channels\s*\{/, `${SOURCES.events}: stats_vec's channel loop`), /\bc\.(\w+)/g, `${SOURCES.events}: stats_vec channels`);
  if (stats.at(-1)?.[0] !== 'channels') fail(`${SOURCES.events}: stats_vec must end with the channel count (s.channels.len())`);

  // The batch tables' layout: `pub const NAME: usize = <number>;` (values may repeat).
  const batch = [...stripComments(read('batch')).matchAll(/pub const (\w+)\s*:\s*usize\s*=\s*(\d+)\s*;/g)].map((m) => [m[1], Number(m[2])]);
  for (const name of ['RECORDS', 'HEADER_WORDS', 'TX_WORDS', 'EV_WORDS']) if (!batch.some(([n]) => n === name)) fail(`${SOURCES.batch}: pub const ${name}: usize not found`);

  return { ev, closeKinds, sendResults, datagram, states, pathEvents, fields, fecWhole, channelKinds, stats, channelStats, batch };
}

const key = (k) => (/^[A-Za-z_$][\w$]*$/.test(String(k)) ? String(k) : typeof k === 'number' && k >= 0 ? String(k) : `'${k}'`);
const val = (v) => (typeof v === 'number' ? String(v) : `'${v}'`);
const obj = (entries) => `{\n${entries.map(([k, v]) => `  ${key(k)}: ${val(v)},`).join('\n')}\n}`;

/** The generated file's text from the Rust sources under `root`. */
export function generate(root = ROOT) {
  const read = (name) => {
    try {
      return readFileSync(join(root, SOURCES[name]), 'utf8');
    } catch (e) {
      if (e.code === 'ENOENT') fail(`${SOURCES[name]} is missing: if it moved, update SOURCES in sdk/scripts/gen-codes.mjs`);
      throw e;
    }
  };
  const t = tables(read);
  const src = (name) => SOURCES[name];
  return `// GENERATED by sdk/scripts/gen-codes.mjs from the Rust code named on each
// table; do not edit. After changing a code there, run
// \`node sdk/scripts/gen-codes.mjs\`: the SDK's tests fail while this file is stale.
//
// The numbers the wasm bindings (wasm/wasm) answer with and take, by name.

/** Event kinds in \`takeEvents\` records (${src('events')}). */
export const EV = ${obj(t.ev)} as const;

/** Close kinds in a closed event's record, by the \`CloseReason\` each stands for (${src('events')}). */
export const CLOSE_KINDS = ${obj(t.closeKinds)} as const;

/** A negative \`send\` result and its error code (\`send_code\` in ${src('client')}, codes from \`SendError::code\` in ${src('sendError')}). */
export const SEND_ERRORS = ${obj(t.sendResults)} as const;

/** A client's \`handleDatagram\` verdict: taken, or why it was dropped (\`drop_code\` in ${src('client')}). */
export const DATAGRAM = ${obj(t.datagram)} as const;

/** A client's \`state()\` (${src('client')}). */
export const CLIENT_STATE = ${obj(t.states)} as const;

/** A server's \`pollPathEvent\`: a candidate address validated or abandoned (${src('server')}). */
export const PATH_EVENT = ${obj(t.pathEvents)} as const;

/** \`ConfigInput\` field numbers for \`get\`/\`set\` (\`enum Field\` in ${src('config')}). */
export const CONFIG_FIELD = ${obj(t.fields)} as const;

/** Added to the FEC preset's number: latency-targeted messages go whole, never in halves (\`FEC_WHOLE\` in ${src('config')}). */
export const FEC_WHOLE = ${t.fecWhole};

/** Channel kinds for \`addChannel\` (\`ChannelKind\` in ${src('wire')}). */
export const CHANNEL_KIND = ${obj(t.channelKinds)} as const;

/** Positions in the \`stats()\` vector (\`stats_vec\` in ${src('events')}); \`channels\` holds the channel count. */
export const STATS = ${obj(t.stats)} as const;

/** Each channel's figures, after \`STATS\`: \`STATS.channels\` groups of this many (\`stats_vec\`). */
export const CHANNEL_STATS = ${obj(t.channelStats)} as const;

/** Layout of the tables \`transmit\` and \`takeEvents\` fill, in 32-bit words from \`tablePtr\` (${src('batch')}). */
export const BATCH = ${obj(t.batch)} as const;
`;
}

function main(argv) {
  const check = argv.includes('--check');
  const i = argv.indexOf('--file');
  const file = i >= 0 ? resolve(argv[i + 1] ?? fail('--file needs a path')) : OUT;
  const text = generate();
  const name = relative(process.cwd(), file) || file;
  if (!check) {
    writeFileSync(file, text);
    console.log(`[gen-codes] wrote ${name}`);
    return 0;
  }
  let current = null;
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    // missing: stale
  }
  if (current === text) return 0;
  console.error(`[gen-codes] ${name} is stale (the Rust codes changed): run node sdk/scripts/gen-codes.mjs`);
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof GenError)) throw e;
    console.error(`[gen-codes] ${e.message}`);
    process.exitCode = 2;
  }
}
