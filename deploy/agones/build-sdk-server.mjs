#!/usr/bin/env node
// Builds Agones' SDK server (its `--local` mode is what agones.test.mjs runs the arcade
// against) and keeps Agones' CustomResourceDefinitions beside it (what fleet.yaml and
// gameserver.yaml are validated against), from a checkout of Agones' source:
//
//   node deploy/agones/build-sdk-server.mjs AGONES_SOURCE_DIR
//
// into ~/.cache/ricochet/tools/agones-sdk/{sdk-server,install.yaml,SOURCE}. Agones vendors its
// Go dependencies, so the build is offline (~3 min on 2 cores). Why from source: the Go module
// proxy refuses agones.dev/agones here (403), so `go install agones.dev/agones/cmd/sdk-server@…`
// cannot run; the source was taken from Agones' public repository at the commit SOURCE names.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const AGONES_TOOLS = join(process.env.RICOCHET_CACHE || join(homedir(), '.cache', 'ricochet'), 'tools', 'agones-sdk');

const src = resolve(process.argv[2] ?? '');
if (!process.argv[2] || !existsSync(join(src, 'cmd', 'sdk-server', 'main.go'))) {
  console.error('usage: build-sdk-server.mjs AGONES_SOURCE_DIR (a checkout with cmd/sdk-server and vendor/)');
  process.exit(2);
}
mkdirSync(AGONES_TOOLS, { recursive: true });
const out = join(AGONES_TOOLS, 'sdk-server');
console.log(`$ go build -mod=vendor -o ${out} ./cmd/sdk-server   (in ${src})`);
const r = spawnSync('go', ['build', '-mod=vendor', '-o', out, './cmd/sdk-server'], { cwd: src, stdio: 'inherit' });
if (r.status !== 0) process.exit(1);
copyFileSync(join(src, 'install', 'yaml', 'install.yaml'), join(AGONES_TOOLS, 'install.yaml'));
const chart = readFileSync(join(src, 'install', 'helm', 'agones', 'Chart.yaml'), 'utf8').match(/^version: (.+)$/m)?.[1];
const commit = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: src, encoding: 'utf8' }).stdout.trim();
writeFileSync(join(AGONES_TOOLS, 'SOURCE'), `agones ${chart ?? '?'}${commit ? ` commit ${commit}` : ''}\n`);
console.log(`[agones] ${out} and install.yaml (agones ${chart})`);
