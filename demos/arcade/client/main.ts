// The arcade page: joins a room through the relay, runs the local player's
// prediction at a fixed 60 Hz, draws at the display rate, and feeds the
// network panel. `window.arcade` exposes what the browser tests check.
import { init } from '@ricochet/sdk/slim';
import { encode, MAX_INPUT_FRAMES, KEY_DOWN, KEY_LEFT, KEY_RIGHT, KEY_UP, type Message } from '../protocol/index.js';
import { GameState } from './game.js';
import { join, type GameLink } from './net.js';
import { NetworkPanel } from './panel.js';
import { colorOf, draw } from './render.js';

const STEP_MS = 1000 / 60;
const params = new URLSearchParams(location.search);
const room = Math.min(255, Math.max(0, Number(params.get('room') ?? 0) | 0));
const name = (params.get('name') ?? `player-${Math.floor(Math.random() * 9000 + 1000)}`).slice(0, 16);

const canvas = document.getElementById('arena') as HTMLCanvasElement;
const ctx = canvas.getContext('2d')!;
const $ = (id: string) => document.getElementById(id)!;

let game = new GameState();
let link: GameLink | null = null;
let forceWebSocket = params.get('force') === 'websocket';
const keys = new Set<string>();
let firing = false;
let aim = 0;
let mouse = { x: 0, y: 0 };

const panel = new NetworkPanel($('net-panel'), {
  setForceWebSocket: (on) => {
    forceWebSocket = on;
    const l = link;
    // A live session moves to the other transport; otherwise join afresh.
    if (l && l.conn.state === 'open')
      void l.switchTo(on ? 'websocket' : undefined).then(
        () => panel.setTransport(l.kind),
        (e: Error) => ($('status').textContent = `could not switch: ${e.message}`),
      );
    else void connect();
  },
  setFec: (preset) => link?.conn.setFec(preset),
  relayHttp: () => link?.relayHttp ?? null,
});

async function connect(): Promise<void> {
  link?.conn.close(1000, 'reconnecting');
  link = null;
  game = new GameState();
  $('status').textContent = `joining room ${room + 1}…`;
  try {
    const l = await join({ room, name, ...(forceWebSocket ? { force: 'websocket' as const } : {}) }, (m: Message) => game.apply(m));
    link = l;
    panel.setTransport(l.kind, l.fallbackReason);
    void panel.syncFromRelay();
    $('status').textContent = `room ${room + 1} · ${name}`;
    l.conn.on('close', (e) => {
      if (link === l) $('status').textContent = `disconnected: ${e.reason || e.kind}`;
    });
  } catch (e) {
    $('status').textContent = `could not join: ${(e as Error).message}`;
  }
}

const KEYMAP: Record<string, number> = { w: KEY_UP, arrowup: KEY_UP, s: KEY_DOWN, arrowdown: KEY_DOWN, a: KEY_LEFT, arrowleft: KEY_LEFT, d: KEY_RIGHT, arrowright: KEY_RIGHT };
const typing = () => document.activeElement?.tagName === 'INPUT' && (document.activeElement as HTMLInputElement).type === 'text';
addEventListener('keydown', (e) => {
  if (typing()) return;
  const k = e.key.toLowerCase();
  if (k in KEYMAP || k === ' ') e.preventDefault();
  if (k === ' ') firing = true;
  keys.add(k);
});
addEventListener('keyup', (e) => {
  const k = e.key.toLowerCase();
  if (k === ' ') firing = false;
  keys.delete(k);
});
addEventListener('blur', () => (keys.clear(), (firing = false)));
canvas.addEventListener('mousemove', (e) => {
  const r = canvas.getBoundingClientRect();
  mouse = { x: ((e.clientX - r.left) / r.width) * game.width, y: ((e.clientY - r.top) / r.height) * game.height };
});
canvas.addEventListener('mousedown', () => (firing = true));
addEventListener('mouseup', () => (firing = false));

// Rooms are numbers; the picker offers the first eight (any 0..255 works in the URL).
const roomPick = $('room-pick') as HTMLSelectElement;
for (const r of new Set([...Array(8).keys(), room])) roomPick.append(new Option(`${r + 1}`, `${r}`, false, r === room));
roomPick.onchange = () => {
  const q = new URLSearchParams(location.search);
  q.set('room', roomPick.value);
  q.set('name', name);
  location.search = q.toString();
};

const chatInput = $('chat-input') as HTMLInputElement;
chatInput.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || !chatInput.value.trim() || !link) return;
  link.conn.send('events', encode({ type: 'chat', text: chatInput.value.trim() }));
  chatInput.value = '';
});

/** One fixed 1/60 s step: sample input, predict, send (with the last 3 inputs again). */
function step(): void {
  const p = game.predictor;
  if (!link || !p) return;
  let k = 0;
  for (const key of keys) k |= KEYMAP[key] ?? 0;
  aim = Math.atan2(mouse.y - p.state.y, mouse.x - p.state.x);
  const msg = game.input({ keys: k, fire: firing, aim });
  if (msg && link.conn.state === 'open') link.conn.send('input', encode(msg));
}

let nextStep = performance.now();
// Steps run on a timer, not only on animation frames, so the game keeps its
// pace when frames are throttled.
setInterval(() => {
  const now = performance.now();
  // After a stall, catch up at most MAX_INPUT_FRAMES steps: inputs sent in
  // one task share a datagram and supersede each other on the sequenced
  // channel, and the newest message repeats only that many.
  if (now - nextStep > (MAX_INPUT_FRAMES - 1) * STEP_MS) nextStep = now - (MAX_INPUT_FRAMES - 1) * STEP_MS;
  while (now >= nextStep) {
    step();
    nextStep += STEP_MS;
  }
}, 4);

function frame(now: number): void {
  if (game.ready) draw(ctx, game, now, aim);
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

setInterval(() => {
  if (!link || link.conn.state !== 'open') return;
  panel.sample(link.stats(), performance.now());
  renderSidebar();
}, 250);

function renderSidebar(): void {
  const rows = [...game.roster.values()].sort((a, b) => b.kills - a.kills || a.deaths - b.deaths);
  $('scores').replaceChildren(
    ...rows.map((r) => {
      const li = document.createElement('li');
      li.innerHTML = `<i style="background:${colorOf(r.id)}"></i><b></b><span>${r.kills} / ${r.deaths}</span>`;
      li.querySelector('b')!.textContent = r.name + (r.id === game.me ? ' (you)' : '');
      return li;
    }),
  );
  $('chat-log').replaceChildren(
    ...game.chat.slice(-12).map((c) => {
      const div = document.createElement('div');
      div.textContent = `${c.from}: ${c.text}`;
      return div;
    }),
  );
  const p = game.predictor;
  $('hud').textContent = p ? `snapshots ${game.snapshots} · unacked inputs ${p.unacknowledged} · corrections ${p.corrections}` : '';
}

/** What the browser tests read: the game as this client sees it. */
(window as unknown as { arcade: unknown }).arcade = {
  view() {
    const others = game.view(performance.now()).players;
    const p = game.predictor;
    const players = [...others.map((o) => ({ ...o })), ...(p && game.meServer ? [{ ...game.meServer, x: p.state.x, y: p.state.y }] : [])];
    return {
      connected: link?.conn.state === 'open' && game.ready,
      transport: link?.kind ?? null,
      me: game.me,
      room: game.room,
      players: players.map((q) => ({ id: q.id, x: q.x, y: q.y, alive: q.alive, hp: q.hp, ...game.roster.get(q.id) })),
      roster: [...game.roster.values()],
      snapshots: game.snapshots,
      stats: link?.stats() ?? null,
      graphs: { rtt: panel.rtt.latest(), bandwidth: panel.bandwidth.latest(), fec: panel.fec.latest() },
    };
  },
};

// The SDK's wasm is served beside the page (the slim entry keeps the bundle small).
await init('/ricochet_wasm.wasm');
void connect();
