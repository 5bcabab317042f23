// Type-checked (never run) with strict, skipLibCheck false, lib es2022 only
// (no DOM) and @types/node: the SDK's and the relay's public declarations
// as an app and a server use them. Copied as usage.ts (bundler resolution)
// and usage.mts (node16).
import { Connection, openTransport, RicochetError, type ConnectionStats, type TransportChoice } from '@ricochet/sdk';
import { init } from '@ricochet/sdk/slim';
import { DEFAULTS, mintToken, Relay, type RelayOptions } from '@ricochet/relay';
import { startTestRelay } from '@ricochet/relay/testing';

export async function client(url: string): Promise<ConnectionStats> {
  await init();
  const choice: TransportChoice = await openTransport({ webSocketUrl: url, force: 'websocket' });
  const conn = new Connection(choice.transport, { handshake: 'types', channels: [{ kind: 'reliable-ordered', name: 'chat' }] });
  await conn.ready;
  conn.on('message', ({ channelName, data }) => {
    const n: number = data.byteLength;
    void [channelName, n];
  });
  conn.on('close', ({ code }) => void code);
  const id = conn.send('chat', new Uint8Array([1, 2, 3]));
  conn.on('acked', (e) => void (e.id === id));
  if (!(new Error() instanceof RicochetError)) conn.close();
  return conn.stats();
}

export async function server(secret: string): Promise<string> {
  const options: RelayOptions = { ...DEFAULTS, tokenSecret: secret, allowBackends: ['127.0.0.1:4000'] };
  const relay = new Relay(options);
  const { webSocketUrl } = await relay.start();
  await relay.stop();
  const test = await startTestRelay({ backends: ['127.0.0.1:4000'] });
  await test.stop();
  return `${webSocketUrl}?token=${mintToken(secret, { sub: 'types', backend: '127.0.0.1:4000', ttlSeconds: 60 })}`;
}
