// A minimal typed event emitter (no Node dependency, works in browsers).

export class Emitter<Events extends Record<string, unknown>> {
  private handlers: { [K in keyof Events]?: ((e: Events[K]) => void)[] } = {};

  on<K extends keyof Events>(type: K, fn: (e: Events[K]) => void): () => void {
    (this.handlers[type] ??= []).push(fn);
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
    const list = this.handlers[type];
    if (list) this.handlers[type] = list.filter((f) => f !== fn);
  }

  protected emit<K extends keyof Events>(type: K, e: Events[K]): void {
    const list = this.handlers[type];
    if (list) for (const fn of list.slice()) fn(e);
  }
}
