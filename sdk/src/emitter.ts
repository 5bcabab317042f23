// A minimal typed event emitter (no Node dependency, works in browsers).
// Event names are checked: `on('mesage', …)` does not compile.

/** Events of one type kept for the first listener: the queue, its limit, and what to do past it. */
interface Held<E> {
  list: E[];
  limit: number;
  overflow: () => void;
  flushing: boolean;
}

/**
 * A listener, compared the way methods are (bivariantly), so that an emitter
 * of narrower events (a `Connection<'chat'>`) still passes for a wider one.
 */
type Listener<E> = { bivariant(e: E): void }['bivariant'];

export class Emitter<Events extends { [K in keyof Events]: unknown }> {
  private handlers_: { [K in keyof Events]?: Listener<Events[K]>[] } = {};
  private held_: { [K in keyof Events]?: Held<Events[K]> } = {};

  on<K extends keyof Events>(type: K, fn: (e: Events[K]) => void): () => void {
    (this.handlers_[type] ??= []).push(fn);
    const h = this.held_[type];
    // Held events go to the first listener, after the call that attached it
    // returns; newer ones queue behind them, so order is kept.
    if (h && h.list.length > 0 && !h.flushing) {
      h.flushing = true;
      queueMicrotask(() => {
        h.flushing = false;
        const list = h.list.splice(0);
        for (const e of list) this.deliver_(type, e);
      });
    }
    return () => this.off(type, fn);
  }

  once<K extends keyof Events>(type: K, fn: (e: Events[K]) => void): () => void {
    const off = this.on(type, (e) => {
      off();
      fn(e);
    });
    return off;
  }

  off<K extends keyof Events>(type: K, fn: (e: Events[K]) => void): void {
    const list = this.handlers_[type];
    if (list) this.handlers_[type] = list.filter((f) => f !== fn);
  }

  /**
   * Keep events of `type` that find no listener (up to `limit`) for the
   * first one instead of dropping them; past the limit, `overflow` runs once.
   */
  protected holdUnheard<K extends keyof Events>(type: K, limit: number, overflow: () => void): void {
    this.held_[type] = { list: [], limit, overflow, flushing: false };
  }

  protected emit<K extends keyof Events>(type: K, e: Events[K]): void {
    const h = this.held_[type];
    if (h && (h.list.length > 0 || !this.handlers_[type]?.length)) {
      if (h.list.length < h.limit) h.list.push(e);
      else if (h.limit > 0) {
        h.limit = 0;
        h.list = [];
        h.overflow();
      }
      return;
    }
    this.deliver_(type, e);
  }

  private deliver_<K extends keyof Events>(type: K, e: Events[K]): void {
    const list = this.handlers_[type];
    if (list) for (const fn of list.slice()) fn(e);
  }
}
