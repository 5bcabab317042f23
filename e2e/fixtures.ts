// The project's own e2e uses the fixture games use (@ricochet/relay/playwright):
// a relay per test in front of the game's server, sessions through a
// simulated network. Here the game's server is the native echo server.
import { test as ricochet } from '@ricochet/relay/playwright';
import { startEcho } from './stack.js';

export const test = ricochet.extend<{ echoServer: string }>({
  echoServer: async ({}, use) => {
    const echo = await startEcho();
    await use(`127.0.0.1:${echo.port}`);
    echo.proc.kill('SIGTERM');
  },
  backends: async ({ echoServer }, use) => use([echoServer]),
});
export { expect } from '@ricochet/relay/playwright';
