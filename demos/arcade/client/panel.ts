// The network made visible: pick a simulator profile or set latency, jitter,
// loss and bursts live (the relay's test-control endpoint), force WebSocket,
// pick this browser's FEC preset, and watch RTT, loss, FEC recoveries,
// retransmissions and bandwidth from conn.stats().
import { NETWORK_PROFILES, type ConnectionStats, type FecPreset } from '@ricochet/sdk/slim';
import { Graph } from './graph.js';

export interface PanelHooks {
  /** Move to WebSocket (forced) or back to WebTransport first. */
  setForceWebSocket(on: boolean): void;
  /** This browser's forward error correction (repair for what it sends). */
  setFec(preset: FecPreset): void;
  relayHttp(): string | null;
}

export interface LinkSettingsForm {
  latencyMs: number;
  jitterMs: number;
  loss: number;
  burstCorrelation: number;
}

/** POST /test/impairment as text/plain: a simple request, so no CORS preflight. */
export async function setImpairment(relayHttp: string, body: object): Promise<{ impairment: unknown }> {
  const res = await fetch(`${relayHttp}/test/impairment`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(body) });
  const json = (await res.json()) as { impairment: unknown; error?: string };
  if (!res.ok) throw new Error(json.error ?? `relay answered ${res.status}`);
  return json;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
}

export class NetworkPanel {
  readonly rtt: Graph;
  readonly loss: Graph;
  readonly retrans: Graph;
  readonly fec: Graph;
  readonly bandwidth: Graph;
  private readonly transportLabel = el('span', { id: 'transport' });
  private readonly status = el('div', { className: 'status' });
  private last: { at: number; s: ConnectionStats } | null = null;
  private readonly profile: HTMLSelectElement;

  constructor(root: HTMLElement, private readonly hooks: PanelHooks) {
    const profile = el('select', { id: 'profile' }, el('option', { value: '' }, 'none (clean)'), ...NETWORK_PROFILES.map((p) => el('option', { value: p }, p)));
    this.profile = profile;
    profile.onchange = () => void this.post(profile.value ? { profile: profile.value } : { off: true }, profile.value || 'clean');
    const sliders = {
      latencyMs: this.slider('latency', 0, 300, 1, 'ms'),
      jitterMs: this.slider('jitter', 0, 100, 1, 'ms'),
      loss: this.slider('loss', 0, 30, 0.5, '%'),
      burstCorrelation: this.slider('bursts', 0, 90, 5, '%'),
    };
    let debounce: ReturnType<typeof setTimeout> | undefined;
    const applyCustom = () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => {
        profile.value = '';
        const s = this.formValues(sliders);
        void this.post({ up: s, down: s }, `custom ${s.latencyMs} ms ±${s.jitterMs}, ${(s.loss * 100).toFixed(1)} % loss`);
      }, 150);
    };
    for (const s of Object.values(sliders)) s.input.oninput = () => ((s.out.textContent = `${s.input.value} ${s.unit}`), applyCustom());
    const force = el('input', { type: 'checkbox', id: 'force-ws' });
    force.onchange = () => hooks.setForceWebSocket(force.checked);
    const presets: FecPreset[] = ['balanced', 'low-latency', 'thrifty', 'off'];
    const fec = el('select', { id: 'fec' }, ...presets.map((p) => el('option', { value: p }, p)));
    fec.onchange = () => hooks.setFec(fec.value as FecPreset);
    const graphs = el('div', { className: 'graphs' });
    const canvas = () => graphs.appendChild(el('canvas', { width: 300, height: 64 }));
    this.rtt = new Graph(canvas(), 'round-trip time', 'ms', [{ label: 'rtt', color: '#3ec1ff' }]);
    this.loss = new Graph(canvas(), 'packet loss', '%', [
      { label: 'out', color: '#ff5d73' },
      { label: 'in', color: '#ffd23f' },
    ]);
    this.retrans = new Graph(canvas(), 'retransmissions', '/s', [{ label: 'rtx', color: '#c77dff' }]);
    // Packets this browser rebuilt from the server's repair, and repair it sent.
    this.fec = new Graph(canvas(), 'FEC', '/s', [
      { label: 'recovered', color: '#2ec4b6' },
      { label: 'repair out', color: '#e0e0e0' },
    ]);
    this.bandwidth = new Graph(canvas(), 'bandwidth', 'kB/s', [
      { label: 'up', color: '#7ae582' },
      { label: 'down', color: '#ff9f1c' },
    ]);
    root.append(
      el('h2', {}, 'Network'),
      el('div', { className: 'row' }, 'transport: ', this.transportLabel),
      el('label', { className: 'row' }, force, ' force WebSocket'),
      el('label', { className: 'row' }, 'FEC (uploads) ', fec),
      el('label', { className: 'row' }, 'profile ', profile),
      ...Object.values(sliders).map((s) => s.row),
      this.status,
      graphs,
    );
  }

  /** Shows the link the relay is simulating now (it may have started impaired). */
  async syncFromRelay(): Promise<void> {
    const relay = this.hooks.relayHttp();
    if (!relay) return;
    try {
      const { impairment } = (await (await fetch(`${relay}/test/impairment`)).json()) as { impairment: unknown };
      if (typeof impairment === 'string') this.profile.value = impairment;
      this.status.textContent = `link: ${typeof impairment === 'string' ? impairment : impairment ? 'custom' : 'clean'}`;
    } catch {
      this.status.textContent = 'link controls unavailable (relay without test control)';
    }
  }

  setTransport(kind: string, fallbackReason?: string): void {
    this.transportLabel.textContent = kind === 'webtransport' ? 'WebTransport (QUIC datagrams)' : `WebSocket${fallbackReason ? ` (${fallbackReason})` : ''}`;
    this.transportLabel.dataset.kind = kind;
    this.last = null;
  }

  /** One sample of the connection's counters into the graphs. */
  sample(s: ConnectionStats, nowMs: number): void {
    const prev = this.last;
    this.last = { at: nowMs, s };
    if (!prev) return;
    const dt = Math.max(1e-3, (nowMs - prev.at) / 1000);
    this.rtt.push([s.rttMs]);
    this.loss.push([s.recent.lossOut * 100, s.recent.lossIn * 100]); // the last 2 s, not the whole match
    this.retrans.push([(s.retransmissions - prev.s.retransmissions) / dt]);
    this.fec.push([(s.fecRecovered - prev.s.fecRecovered) / dt, (s.fecRepairPacketsOut - prev.s.fecRepairPacketsOut) / dt]);
    this.bandwidth.push([(s.bytesOut - prev.s.bytesOut) / dt / 1000, (s.bytesIn - prev.s.bytesIn) / dt / 1000]);
  }

  private formValues(sliders: Record<keyof LinkSettingsForm, { input: HTMLInputElement }>): LinkSettingsForm {
    const v = (k: keyof LinkSettingsForm) => Number(sliders[k].input.value);
    return { latencyMs: v('latencyMs'), jitterMs: v('jitterMs'), loss: v('loss') / 100, burstCorrelation: v('burstCorrelation') / 100 };
  }

  private slider(label: string, min: number, max: number, step: number, unit: string) {
    const input = el('input', { type: 'range', min: String(min), max: String(max), step: String(step), value: '0', id: `net-${label}` });
    const out = el('output', {}, `0 ${unit}`);
    return { input, out, unit, row: el('label', { className: 'row slider' }, el('span', {}, label), input, out) };
  }

  private async post(body: object, what: string): Promise<void> {
    const relay = this.hooks.relayHttp();
    if (!relay) return;
    try {
      await setImpairment(relay, body);
      this.status.textContent = `link: ${what}`;
    } catch (e) {
      this.status.textContent = `could not set the link: ${(e as Error).message}`;
    }
  }
}
