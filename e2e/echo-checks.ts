// What every echo-page run must show, whatever the browser, transport or
// link: both ordered channels complete and in order, no corrupt payload,
// and exactly one receipt per message sent (e2e/pages/echo.js).
import { expect } from '@playwright/test';

export function expectComplete(r: Record<string, unknown>): void {
  expect(r.ordered0).toBe(true);
  expect(r.ordered1).toBe(true);
  expect(r.corrupt).toBe(0);
  expect(r.receipts).toBe(r.messages);
  expect(r.doubleReceipts).toBe(0);
}
