// Load generator. Usage: node bench.cjs URL PID [clients=8] [window=64] [total=200000] [warm=2000] [size=100]
const WebSocket = require('ws');
const fs = require('fs');
const [url, pidS] = process.argv.slice(2, 4);
const pid = +pidS;
const NC = +(process.argv[4] || 8), WARG = String(process.argv[5] || 64);
const PACE = WARG.startsWith('p') ? +WARG.slice(1) : 0, WIN = PACE ? 0 : +WARG;
const TOTAL = +(process.argv[6] || 200000), WARM = +(process.argv[7] || 2000), SIZE = +(process.argv[8] || 100);
const TCK = 100; // clock ticks per second (getconf CLK_TCK)
function cpu() {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { u: +f[11] / TCK, s: +f[12] / TCK }; // fields 14,15 (utime, stime)
}
let echoes = 0, phase = 0, t0, c0, done = false, errors = 0, lost = 0, reorders = 0;
const socks = [];
function finish() {
  if (done) return; done = true;
  const c1 = cpu(), t1 = process.hrtime.bigint();
  const n = echoes - WARM;
  const wall = Number(t1 - t0) / 1e9;
  const u = c1.u - c0.u, s = c1.s - c0.s;
  const out = { url, echoes: n, wall: +wall.toFixed(3), user: +u.toFixed(2), sys: +s.toFixed(2),
    cpu: +(u + s).toFixed(2), msgs_per_cpu_s: Math.round(2 * n / (u + s)), echoes_per_wall_s: Math.round(n / wall), order_errors: errors, lost, reorders };
  console.log(JSON.stringify(out));
  for (const ws of socks) { clearInterval(ws._t); ws.terminate(); }
  setTimeout(() => process.exit(0), 50);
}
let open = 0;
for (let i = 0; i < NC; i++) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  socks.push(ws);
  let seqOut = 0, seqIn = 0;
  const send = () => { const b = Buffer.alloc(SIZE); b.writeUInt32LE(seqOut++, 0); b.writeUInt32LE(i, 4); ws.send(b); };
  ws.on('open', () => { if (++open === NC) for (const w of socks) w._start(); });
  ws._start = () => { if (PACE) setTimeout(() => { send(); ws._t = setInterval(send, PACE); }, Math.random() * PACE); else for (let k = 0; k < WIN; k++) send(); };
  ws.on('message', (d) => {
    const sq = d.readUInt32LE(0);
    if (d.length !== SIZE || sq !== seqIn || d.readUInt32LE(4) !== i) { errors++; if (sq < seqIn) reorders++; else lost += sq - seqIn; }
    seqIn = sq + 1;
    echoes++;
    if (phase === 0 && echoes >= WARM) { phase = 1; c0 = cpu(); t0 = process.hrtime.bigint(); }
    if (echoes >= WARM + TOTAL) return finish();
    if (!PACE) send();
  });
  ws.on('error', (e) => { console.error('ws error', e.message); process.exit(1); });
}
setTimeout(() => { console.error('timeout; echoes', echoes); process.exit(2); }, 120000);
