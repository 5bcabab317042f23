// S1's chart: per loss cell, the latency distribution of each protocol as a
// complementary CDF (share of messages slower than x) on a log scale, so the
// tails that p99 and p99.9 summarise are visible. Rendered to SVG by Vega-Lite.
import { writeFileSync } from 'node:fs';
import * as vega from 'vega';
import { compile } from 'vega-lite';

/** ~20 points per decade of exceedance, from the median to the maximum. */
function ccdfPoints(latenciesUs) {
  const v = Float64Array.from(latenciesUs).sort();
  const n = v.length;
  const points = [];
  let last = -1;
  for (let j = 0; ; j++) {
    const exceed = 10 ** (-j / 20);
    const i = Math.min(n - 1, Math.max(0, Math.ceil(n * (1 - exceed))));
    if (i !== last) points.push({ ms: v[i] / 1000, slower: Math.max(1 / n, (n - 1 - i) / n || 1 / n) });
    last = i;
    if (i === n - 1) break;
  }
  return points;
}

/** `results`: [{ cell: { name, title }, rows: { [key]: { label, latenciesUs } } }]. */
export async function writeChart(path, results) {
  const values = [];
  for (const r of results) {
    for (const row of Object.values(r.rows)) {
      if (!row.latenciesUs?.length) continue;
      for (const p of ccdfPoints(row.latenciesUs)) values.push({ cell: r.cell.title, protocol: row.label, ...p });
    }
  }
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'S1: one-way latency, 400 B reliable-ordered at 60 Hz, 10 ± 2 ms each way',
    data: { values },
    facet: { column: { field: 'cell', type: 'nominal', sort: results.map((r) => r.cell.title), title: null } },
    spec: {
      width: 260,
      height: 220,
      layer: [
        {
          mark: { type: 'line', interpolate: 'step-after' },
          encoding: {
            x: { field: 'ms', type: 'quantitative', title: 'one-way latency (ms)', scale: { type: 'log' } },
            y: { field: 'slower', type: 'quantitative', title: 'share of messages slower (dashed: p99, p99.9)', scale: { type: 'log' }, axis: { format: '~e' } },
            color: { field: 'protocol', type: 'nominal', legend: { orient: 'bottom', columns: 1, labelLimit: 0, title: null } },
          },
        },
        // p99 and p99.9 are where the curves cross these lines.
        { mark: { type: 'rule', strokeDash: [4, 4], color: '#888' }, encoding: { y: { datum: 0.01 } } },
        { mark: { type: 'rule', strokeDash: [2, 4], color: '#888' }, encoding: { y: { datum: 0.001 } } },
      ],
    },
    resolve: { scale: { x: 'shared' } },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  writeFileSync(path, await view.toSVG());
  view.finalize();
}
