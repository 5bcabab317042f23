// Single-use connect tokens: every jti that opened a session is remembered
// until its token expires (plus the clock leeway), so a copied or leaked
// token cannot open a second session. Bounded: when full, new sessions are
// refused rather than old entries forgotten (forgetting would re-arm tokens).

export class ReplayCache {
  /** jti → expiry (unix seconds). Insertion order is roughly expiry order. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly capacity: number,
    private readonly leewaySeconds: number,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  has(jti: string): boolean {
    return this.seen.has(jti);
  }

  /**
   * Record `jti` (valid until `exp`). Returns 'reused' if it was seen
   * before, 'full' if there is no room even after pruning, else 'ok'.
   */
  use(jti: string, exp: number, nowSeconds = Date.now() / 1000): 'ok' | 'reused' | 'full' {
    if (this.seen.has(jti)) return 'reused';
    if (this.seen.size >= this.capacity) this.prune(nowSeconds);
    if (this.seen.size >= this.capacity) return 'full';
    this.seen.set(jti, exp);
    return 'ok';
  }

  /** Forget tokens that can no longer pass the expiry check. */
  prune(nowSeconds = Date.now() / 1000): void {
    for (const [jti, exp] of this.seen) if (exp + this.leewaySeconds < nowSeconds) this.seen.delete(jti);
  }
}
