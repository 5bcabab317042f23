#!/usr/bin/env node
// The allocator service: your login or matchmaking backend calls
//   POST /allocate  {"player": "<id>"}   (Authorization: Bearer $ALLOCATOR_API_KEY)
// and gets { gameServer, backend, token, relay } for that player's client, which
// connects to the relay with the token; the relay forwards it to the allocated server.
//
// Environment: RICOCHET_RELAY_TOKEN_SECRET (the relays' secret), ALLOCATOR_API_KEY,
// FLEET (default arcade), RELAY_WEBSOCKET_URL, RELAY_WEBTRANSPORT_URL, PORT (8000),
// TOKEN_TTL_SECONDS (60). Runs in the cluster (allocator.yaml) with a service account
// allowed to create GameServerAllocations.
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AllocationError, InClusterAllocator, connectOffer } from './allocator.mjs';

const MAX_BODY = 1024;

function sameSecret(a, b) {
  const x = Buffer.from(a ?? '');
  const y = Buffer.from(b ?? '');
  return x.length === y.length && timingSafeEqual(x, y);
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(body));
}

/** The HTTP handler around an allocator ({ allocate(): Promise<GameServerAllocation> }). */
export function createAllocatorServer({ allocator, secret, apiKey, relay, ttlSeconds = 60 }) {
  if (!apiKey || apiKey.length < 16) throw new Error('ALLOCATOR_API_KEY must be set (≥ 16 characters)');
  return createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/healthz') return send(res, 200, { status: 'ok' });
    if (req.method !== 'POST' || req.url !== '/allocate') return send(res, 404, { error: 'not found' });
    if (!sameSecret(req.headers.authorization, `Bearer ${apiKey}`)) return send(res, 401, { error: 'unauthorized' });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
      if (body.length > MAX_BODY) req.destroy();
    });
    req.on('end', async () => {
      let player;
      try {
        player = JSON.parse(body).player;
      } catch {
        // fall through: reported below
      }
      if (typeof player !== 'string' || !/^[\w.@-]{1,128}$/.test(player)) return send(res, 400, { error: 'body must be {"player": "<id>"}' });
      try {
        const allocation = await allocator.allocate();
        send(res, 200, connectOffer(allocation, { secret, sub: player, ttlSeconds, relay }));
      } catch (e) {
        if (e instanceof AllocationError) return send(res, 503, { error: e.message }, e.retry ? { 'retry-after': '1' } : {});
        console.error(JSON.stringify({ event: 'allocate-failed', error: e.message }));
        send(res, 502, { error: 'allocation failed' });
      }
    });
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const env = process.env;
  const server = createAllocatorServer({
    allocator: new InClusterAllocator({ fleet: env.FLEET ?? 'arcade' }),
    secret: env.RICOCHET_RELAY_TOKEN_SECRET,
    apiKey: env.ALLOCATOR_API_KEY,
    relay: { webSocketUrl: env.RELAY_WEBSOCKET_URL, webTransportUrl: env.RELAY_WEBTRANSPORT_URL },
    ttlSeconds: Number(env.TOKEN_TTL_SECONDS ?? 60),
  });
  server.listen(Number(env.PORT ?? 8000), () => console.log(JSON.stringify({ event: 'listening', port: server.address().port })));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}
