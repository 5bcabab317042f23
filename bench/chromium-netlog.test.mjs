// node --test bench/chromium-netlog.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseNetlog, summarizeNetlog } from './chromium-netlog.mjs';

const TYPES = { QUIC_CONGESTION_CONTROL_CONFIGURED: 1, QUIC_SESSION_MESSAGE_FRAME_SENT: 2, QUIC_SESSION_PACKET_SENT: 3, QUIC_SESSION_PACKET_LOST: 4, URL_REQUEST_START_JOB: 5 };

/** A net log of `session`'s events (name, params) and one other session's datagram. */
function netlog(session) {
  const ev = (source, [name, params]) => ({ type: TYPES[name], source: { id: source, type: 1 }, params });
  return {
    constants: { logEventTypes: TYPES },
    events: [
      ev(9, ['QUIC_SESSION_MESSAGE_FRAME_SENT', { message_length: 10 }]),
      ev(9, ['QUIC_SESSION_PACKET_SENT', { sent_time_us: 1 }]),
      ev(3, ['URL_REQUEST_START_JOB', {}]),
      ...session.map((e) => ev(7, e)),
    ],
  };
}

/** A datagram handed over in its own packet at `us`. */
const datagram = (us) => [
  ['QUIC_SESSION_MESSAGE_FRAME_SENT', { message_length: 224 }],
  ['QUIC_SESSION_PACKET_SENT', { sent_time_us: us, size: 251 }],
];

test('delays after the first datagram of each burst, by position', () => {
  const s = summarizeNetlog(
    netlog([
      ['QUIC_CONGESTION_CONTROL_CONFIGURED', { congestion_control_type: 'CUBIC_BYTES' }],
      ...datagram(1_000_000),
      ...datagram(1_000_100),
      ...datagram(1_002_200),
      ['QUIC_SESSION_PACKET_SENT', { sent_time_us: 1_010_000, size: 33 }],
      ...datagram(1_016_700),
      ...datagram(1_016_800),
      ...datagram(1_019_100),
      ['QUIC_SESSION_PACKET_LOST', { packet_number: 4 }],
    ]),
  );
  assert.equal(s.congestionControl.congestion_control_type, 'CUBIC_BYTES');
  assert.equal(s.datagramPackets, 6, 'the busiest session only');
  assert.equal(s.packetsWithoutDatagram, 1);
  assert.equal(s.packetsLost, 1);
  assert.deepEqual(
    s.delayAfterFirstMs.map((p) => [p.position, p.n, p.p50, p.max]),
    [
      [2, 2, 0.1, 0.1],
      [3, 2, 2.2, 2.4],
    ],
  );
});

test('gaps of more than a tick between datagrams, and what left together after the longest', () => {
  const s = summarizeNetlog(
    netlog([
      ...datagram(1_000_000),
      ...datagram(1_016_700),
      // A 59 ms hold (an ACK-only packet inside it does not end it), then four at once.
      ['QUIC_SESSION_PACKET_SENT', { sent_time_us: 1_040_000, size: 33 }],
      ...datagram(1_075_700),
      ...datagram(1_075_800),
      ...datagram(1_075_900),
      ...datagram(1_078_100),
      // A 25 ms gap, one datagram after it.
      ...datagram(1_103_100),
      ...datagram(1_119_800),
    ]),
  );
  assert.deepEqual(s.holds, { n: 2, longestMs: 59, releasedAfterLongest: 4 });
  assert.deepEqual(summarizeNetlog(netlog([...datagram(1_000_000), ...datagram(1_016_700)])).holds, { n: 0, longestMs: 0, releasedAfterLongest: 0 });
});

test('a log the browser never closed still parses', () => {
  const whole = JSON.stringify(netlog(datagram(5)));
  const cut = `${whole.slice(0, whole.lastIndexOf(']'))},\n`;
  assert.throws(() => JSON.parse(cut));
  assert.equal(summarizeNetlog(parseNetlog(cut)).datagramPackets, 1);
});
