// ricochet-relay [flags]            run the relay (flags: see --help)
// ricochet-relay mint-token …       mint a development connect token
import { parseArgs } from 'node:util';
import { loadOptions } from './options.js';
import { Relay } from './relay.js';
import { mintToken } from './token.js';

const HELP = `ricochet-relay: browsers (WebTransport, WebSocket) to UDP game servers

  ricochet-relay --token-secret S --allow-backends 127.0.0.1:4000 [--http-port 8080] [--wt-port 4433]
                 [--host 127.0.0.1] [--max-sessions N] [--config relay.json] [--production]
  ricochet-relay mint-token --secret S --backend host:port [--sub user] [--ttl 60] [--data str]

Every option also reads RICOCHET_RELAY_<NAME> (e.g. RICOCHET_RELAY_TOKEN_SECRET) or a JSON config file.`;

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'mint-token') {
    const { values } = parseArgs({
      args: argv.slice(1),
      options: { secret: { type: 'string' }, backend: { type: 'string' }, sub: { type: 'string' }, ttl: { type: 'string' }, data: { type: 'string' } },
    });
    const secret = values.secret ?? process.env.RICOCHET_RELAY_TOKEN_SECRET;
    if (!secret || !values.backend) throw new Error('mint-token needs --secret (or RICOCHET_RELAY_TOKEN_SECRET) and --backend host:port');
    console.log(
      mintToken(secret, {
        sub: values.sub ?? 'dev',
        backend: values.backend,
        ttlSeconds: Number(values.ttl ?? 60),
        ...(values.data !== undefined ? { data: values.data } : {}),
      }),
    );
    return;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(HELP);
    return;
  }
  const relay = new Relay(loadOptions(argv));
  const a = await relay.start();
  console.log(JSON.stringify({ event: 'listening', ...a }));
  const shutdown = () => {
    relay.drain().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main(process.argv.slice(2)).catch((e: Error) => {
  console.error(`ricochet-relay: ${e.message}`);
  process.exit(2);
});
