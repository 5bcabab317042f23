// A small rolling line graph on a canvas (a charting library would dwarf
// the rest of the page's bundle).

export interface Series {
  label: string;
  color: string;
}

export class Graph {
  private readonly values: number[][];
  private readonly ctx: CanvasRenderingContext2D;

  constructor(
    readonly canvas: HTMLCanvasElement,
    private readonly title: string,
    private readonly unit: string,
    private readonly series: Series[],
    private readonly length = 120,
  ) {
    this.ctx = canvas.getContext('2d')!;
    this.values = series.map(() => []);
  }

  push(sample: number[]): void {
    sample.forEach((v, i) => {
      const s = this.values[i]!;
      s.push(Number.isFinite(v) ? v : 0);
      if (s.length > this.length) s.shift();
    });
    this.draw();
  }

  /** Latest values, for tests and the page's readouts. */
  latest(): number[] {
    return this.values.map((s) => s.at(-1) ?? 0);
  }

  private draw(): void {
    const { ctx, canvas } = this;
    const W = canvas.width;
    const H = canvas.height;
    const top = 18;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = '#111a2c';
    ctx.fillRect(0, 0, W, H);
    const max = Math.max(1e-9, ...this.values.flat()) * 1.15;
    ctx.lineWidth = 1.5;
    this.values.forEach((s, i) => {
      ctx.strokeStyle = this.series[i]!.color;
      ctx.beginPath();
      s.forEach((v, k) => {
        const x = (k / (this.length - 1)) * W;
        const y = H - 2 - (v / max) * (H - top - 4);
        if (k === 0) ctx.moveTo(x, y);
        else ctx.lineTo(x, y);
      });
      ctx.stroke();
    });
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'left';
    ctx.fillStyle = '#9fb0d0';
    ctx.fillText(this.title, 4, 12);
    ctx.textAlign = 'right';
    const text = this.series.map((s, i) => `${s.label} ${fmt(this.values[i]!.at(-1) ?? 0)}`).join('  ');
    ctx.fillText(`${text} ${this.unit}`, W - 4, 12);
  }
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}
