// Client-side prediction with reconciliation: every local input is applied
// at once and kept until the server says it has applied it (`ack`); then
// the server's state is taken and the inputs it has not seen yet are
// replayed on top. The step function must be the server's own arithmetic
// (the same rounding), or every replay is a correction.

/** Options of a {@link Predictor}. */
export interface PredictorOptions<I, S> {
  /** One tick of the simulation: the state after `input`. Must not mutate `state`. */
  step: (state: S, input: I) => S;
  /** The state before the first input. */
  initial: S;
  /** Unacknowledged inputs kept; the oldest is dropped past this. Default 240 (4 s at 60 Hz: by then the server has dropped them). */
  maxPending?: number;
  /** Inputs returned by {@link Predictor.input} to send, newest first: the new one and repeats of those before it, so one lost datagram costs nothing. Default 4. */
  redundancy?: number;
  /** Whether two states agree; a replay that ends elsewhere than the prediction counts in `corrections`. Default `Object.is`. */
  equals?: (a: S, b: S) => boolean;
}

interface Pending<I> {
  seq: number;
  input: I;
}

/** `a` is newer than `b` in wrapping u16 sequence space. */
export function seqNewer(a: number, b: number): boolean {
  const d = (a - b) & 0xffff;
  return d !== 0 && d < 0x8000;
}

/** Predicts the local player's state from its inputs and reconciles it with the server's. */
export class Predictor<I, S> {
  /** The predicted state: the server's last, plus every input it has not acknowledged. */
  state: S;
  /** Reconciliations that ended somewhere other than the prediction had. */
  corrections = 0;
  private seq = 0;
  private pending: Pending<I>[] = [];
  /** The newest inputs, newest first, for redundancy. */
  private recent: I[] = [];
  private readonly step: (state: S, input: I) => S;
  private readonly maxPending: number;
  private readonly redundancy: number;
  private readonly equals: (a: S, b: S) => boolean;

  constructor(options: PredictorOptions<I, S>) {
    this.step = options.step;
    this.state = options.initial;
    this.maxPending = options.maxPending ?? 240;
    this.redundancy = options.redundancy ?? 4;
    this.equals = options.equals ?? Object.is;
    if (!Number.isInteger(this.maxPending) || this.maxPending < 1) throw new RangeError('Predictor: maxPending must be an integer ≥ 1');
    if (!Number.isInteger(this.redundancy) || this.redundancy < 1) throw new RangeError('Predictor: redundancy must be an integer ≥ 1');
  }

  /**
   * Applies one local input now. Returns its sequence number (u16,
   * wrapping, from 1) and the inputs to send, newest first: the server
   * applies those newer than the last it applied.
   */
  input(input: I): { seq: number; inputs: I[] } {
    this.seq = (this.seq + 1) & 0xffff;
    this.pending.push({ seq: this.seq, input });
    if (this.pending.length > this.maxPending) this.pending.shift();
    this.recent.unshift(input);
    if (this.recent.length > this.redundancy) this.recent.length = this.redundancy;
    this.state = this.step(this.state, input);
    return { seq: this.seq, inputs: [...this.recent] };
  }

  /** Takes the server's state as of input `ack` (its newest applied sequence number) and replays the inputs after it. */
  reconcile(server: S, ack: number): void {
    this.pending = this.pending.filter((p) => seqNewer(p.seq, ack));
    const before = this.state;
    let state = server;
    for (const p of this.pending) state = this.step(state, p.input);
    this.state = state;
    if (!this.equals(before, state)) this.corrections++;
  }

  /** Inputs not yet acknowledged by the server. */
  get unacknowledged(): number {
    return this.pending.length;
  }
}
