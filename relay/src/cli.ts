// ricochet-relay [flags]            run the relay (flags: see --help)
// ricochet-relay mint-token …       mint a development connect token
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadOptions } from './options.js';
import { optionsHelp } from './options-help.js';
import { Relay } from './relay.js';
import { mintToken } from './token.js';

const HELP = `ricochet-relay: browsers (WebTransport, WebSocket) to UDP game servers

  RICOCHET_RELAY_TOKEN_SECRET=… ricochet-relay --allow-backends 127.0.0.1:4000 [--http-port 8080] [--wt-port 4433 | --no-webtransport]
                 [--host 127.0.0.1] [--max-sessions N] [--config relay.json] [--production]
                 [--token-secret-file F] [--cert-file F --key-file F] [--metrics-port P --metrics-host H]
  RICOCHET_RELAY_TOKEN_SECRET=… ricochet-relay mint-token --backend host:port [--sub user] [--ttl 60] [--data str]

The token secret (≥ 32 random bytes: openssl rand -base64 32) comes from RICOCHET_RELAY_TOKEN_SECRET,
--token-secret-file or a config file, never a flag. Every option also reads RICOCHET_RELAY_<NAME>
(e.g. RICOCHET_RELAY_MAX_SESSIONS) or a JSON config file. SIGHUP reloads --cert-file/--key-file.
--no-webtransport (RICOCHET_RELAY_WEBTRANSPORT=false) serves WebSocket only; without it, WebTransport
needs the platform's addon package (e.g. @ricochet/relay-linux-x64-gnu, an optional dependency).`;

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'mint-token') {
    const { values } = parseArgs({
      args: argv.slice(1),
      options: { 'secret-file': { type: 'string' }, backend: { type: 'string' }, sub: { type: 'string' }, ttl: { type: 'string' }, data: { type: 'string' } },
    });
    const file = values['secret-file'];
    const secret = file ? readFileSync(file, 'utf8').trim() : process.env.RICOCHET_RELAY_TOKEN_SECRET;
    if (!secret || !values.backend) throw new Error('mint-token needs RICOCHET_RELAY_TOKEN_SECRET (or --secret-file) and --backend host:port');
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
    console.log(`${HELP}\n\nOptions (flag, environment variable, default; or a field of the --config JSON file):\n${optionsHelp()}`);
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
  process.on('SIGHUP', () => void relay.reloadCertificate());
}

main(process.argv.slice(2)).catch((e: Error) => {
  console.error(`ricochet-relay: ${e.message}`);
  process.exit(2);
});
