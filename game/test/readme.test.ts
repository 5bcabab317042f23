// The README's examples, run: its numbers and messages stay true.
import { expect, test } from 'vitest';
import { BitReader, BitWriter, Predictor, Quantizer, SnapshotBuffer, aligned, angle, array, bool, decodeAngle, defineMessages, encodeAngle, lerp, lerpAngle, lerpById, quantized, string, struct, uint } from '../src/index.js';

test('bit packing', () => {
  const w = new BitWriter();
  w.writeBits(9, 4);
  w.writeBool(true);
  w.writeString('Zoë', 16);
  const bytes = w.finish();
  expect(Buffer.from(bytes).toString('hex')).toBe('19045a6fc3ab');
  const r = new BitReader(bytes);
  expect([r.readBits(4), r.readBool(), r.readString(16, 'name')]).toEqual([9, true, 'Zoë']);
  r.finish();
});

test('quantised numbers', () => {
  const POSITION = new Quantizer(0, 0.125, 14);
  expect([POSITION.encode(812.3), POSITION.decode(6498), POSITION.snap(812.3)]).toEqual([6498, 812.25, 812.25]);
  expect(encodeAngle(-Math.PI / 2, 8)).toBe(192);
  expect(decodeAngle(192, 8)).toBe((3 * Math.PI) / 2);
});

test('typed message schemas', () => {
  const position = quantized(new Quantizer(0, 0.125, 14));
  const messages = defineMessages(
    { idBits: 4 },
    {
      join: { id: 1, fields: { room: uint(8), name: string(16) } },
      input: { id: 2, fields: { seq: uint(16), frames: array(struct({ keys: uint(4), fire: bool(), aim: angle(8) }), { min: 1, max: 4 }) } },
      snapshot: {
        id: 9,
        fields: {
          tick: aligned(uint(32)),
          players: array(struct({ id: uint(5), x: position, y: position, hp: uint(2, { max: 3 }) }), { max: 32, countBits: 6 }),
        },
      },
    },
  );
  const bytes = messages.encode({ type: 'join', room: 7, name: 'Zoë' });
  expect(bytes.length).toBe(7);
  expect(messages.decode(bytes)).toEqual({ type: 'join', room: 7, name: 'Zoë' });
  expect(() => messages.encode({ type: 'join', room: 256, name: '' })).toThrow('join.room: 256 is not an integer in 0..255');
  expect(() => messages.decode(new Uint8Array([9, 0, 0, 0, 0, 63]))).toThrow('snapshot.players: count 63 over 32');
});

test('snapshot interpolation and prediction', () => {
  interface Player {
    id: number;
    x: number;
    y: number;
    aim: number;
  }
  const others = new SnapshotBuffer<Player[]>({
    delayTicks: 6,
    msPerTick: 1000 / 60,
    lerp: (a, b, t) => lerpById(a, b, t, (p) => p.id, (p, q) => ({ ...q, x: lerp(p.x, q.x, t), y: lerp(p.y, q.y, t), aim: lerpAngle(p.aim, q.aim, t) })),
  });
  expect(others.sample(0) ?? []).toEqual([]);
  others.push(0, [{ id: 1, x: 0, y: 0, aim: 0 }], 0);
  others.push(12, [{ id: 1, x: 12, y: 0, aim: 0 }], 200);
  expect(others.sample(200)![0]!.x).toBeCloseTo(6, 9);

  const me = new Predictor<{ dx: number; dy: number }, { x: number; y: number }>({
    initial: { x: 0, y: 0 },
    step: (s, i) => ({ x: s.x + i.dx, y: s.y + i.dy }),
    redundancy: 4,
    equals: (a, b) => a.x === b.x && a.y === b.y,
  });
  const { seq, inputs } = me.input({ dx: 1, dy: 0 });
  expect([seq, inputs]).toEqual([1, [{ dx: 1, dy: 0 }]]);
  me.reconcile({ x: 1, y: 0 }, 1);
  expect([me.state, me.corrections]).toEqual([{ x: 1, y: 0 }, 0]);
});
