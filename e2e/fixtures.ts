// A Playwright fixture a game can copy: each test gets a relay whose sessions
// run through a simulated lossy network (no root, no namespaces), in front
// of the game's own server. Here the server is the native echo server.
import { test as base } from '@playwright/test';
import { startTestRelay, type TestRelay } from '@ricochet/relay/testing';
import { startEcho } from './stack.js';

export const test = base.extend<{ impairedRelay: TestRelay; profile: string }>({
  profile: ['s1_5pct', { option: true }],
  impairedRelay: async ({ profile }, use) => {
    const echo = await startEcho();
    const relay = await startTestRelay({ backends: [`127.0.0.1:${echo.port}`], impairment: profile as never });
    await use(relay);
    await relay.stop();
    echo.proc.kill('SIGTERM');
  },
});
export { expect } from '@playwright/test';
