/**
 * Draws Grafana dashboards from real Prometheus data, since Grafana itself cannot run here (no
 * Grafana in Debian's archive or on npm): each panel's targets are run as range queries over a
 * window and drawn in the panel's grid position (Grafana's 24-column grid) with its title, unit,
 * legend (`legendFormat`) and a time axis; stat/gauge panels show their last values. One SVG per
 * dashboard, drawn by this small plotter (lines, axes and text are all a dashboard needs; a chart
 * library would add a browser-shaped dependency for no gain), converted to PNG with sharp.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import type { Dashboard, Panel } from '../prometheus/dashboards.js';
import { allValues, resolveVariables } from '../prometheus/evaluate.js';
import { substitute } from '../prometheus/dashboards.js';
import type { Prometheus, PromSample } from '../prometheus/server.js';

const WIDTH = 1800;
const COL = WIDTH / 24;
const ROW_H = 34;
const HEADER = 70;
const PALETTE = [
  '#7EB26D',
  '#EAB839',
  '#6ED0E0',
  '#EF843C',
  '#E24D42',
  '#1F78C1',
  '#BA43A9',
  '#705DA0',
  '#508642',
  '#CCA300',
  '#447EBC',
  '#C15C17',
  '#890F02',
  '#0A437C',
  '#6D1F62',
  '#584477',
];
const FONT = 'DejaVu Sans, sans-serif';

export interface Series {
  readonly name: string;
  readonly points: readonly [number, number][];
}

export interface PanelData {
  readonly panel: Panel;
  readonly series: readonly Series[];
  readonly error: string | undefined;
}

const esc = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function legendName(sample: PromSample, legendFormat: string | undefined): string {
  if (legendFormat !== undefined && legendFormat !== '' && legendFormat !== '__auto') {
    return legendFormat.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l: string) => sample.metric[l] ?? '');
  }
  const { __name__: name, ...labels } = sample.metric;
  const inner = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ');
  return `${name ?? ''}${inner ? `{${inner}}` : ''}` || 'value';
}

/** A value in the panel's Grafana unit. */
export function formatValue(value: number, unit: string | undefined): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? '+Inf' : '-Inf';
  const num = (v: number, digits = 2) => {
    const abs = Math.abs(v);
    if (abs !== 0 && (abs >= 1e6 || abs < 1e-3)) return v.toExponential(1);
    return String(Number(v.toFixed(abs >= 100 ? 0 : abs >= 10 ? 1 : digits)));
  };
  const scaled = (v: number, steps: [number, string][]) => {
    const abs = Math.abs(v);
    for (const [factor, suffix] of steps) if (abs >= factor) return `${num(v / factor)} ${suffix}`;
    const last = steps[steps.length - 1]!;
    return `${num(v / last[0])} ${last[1]}`;
  };
  switch (unit) {
    case 's':
      if (value === 0) return '0 s';
      return scaled(value, [
        [3600, 'h'],
        [60, 'min'],
        [1, 's'],
        [1e-3, 'ms'],
        [1e-6, 'µs'],
      ]);
    case 'ms':
      return formatValue(value / 1000, 's');
    case 'bytes':
    case 'decbytes':
      return scaled(value, [
        [1024 ** 4, 'TiB'],
        [1024 ** 3, 'GiB'],
        [1024 ** 2, 'MiB'],
        [1024, 'KiB'],
        [1, 'B'],
      ]);
    case 'percentunit':
      return `${num(value * 100)}%`;
    case 'percent':
      return `${num(value)}%`;
    case 'reqps':
      return `${num(value)} req/s`;
    case 'ops':
      return `${num(value)} ops/s`;
    case 'celsius':
      return `${num(value)} °C`;
    case 'watt':
      return `${num(value)} W`;
    case 'short':
    case 'none':
    case undefined:
      if (Math.abs(value) < 1000) return num(value);
      return scaled(value, [
        [1e9, 'B'],
        [1e6, 'M'],
        [1e3, 'K'],
      ]);
    default:
      // Grafana's custom units: `suffix:tok/s`, `prefix:$`.
      if (unit.startsWith('suffix:')) return `${num(value)} ${unit.slice(7)}`;
      if (unit.startsWith('prefix:')) return `${unit.slice(7)}${num(value)}`;
      return `${num(value)} ${unit}`;
  }
}

function niceTicks(min: number, max: number, count = 4): number[] {
  if (min === max) {
    // A flat line: from 0 when it is not negative (as Grafana's soft minimum does), else around it.
    if (min >= 0) [min, max] = [0, max === 0 ? 1 : max * 1.25];
    else [min, max] = [min * 1.25, 0];
  }
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  const last = Math.ceil(max / step - 1e-9) * step;
  for (let t = Math.floor(min / step) * step; t <= last + step * 1e-9; t += step)
    ticks.push(Number(t.toPrecision(12)));
  if (ticks.length < 2) ticks.push(ticks[0]! + step);
  return ticks;
}

const clock = (t: number): string => new Date(t * 1000).toISOString().slice(11, 19);

function drawPanel(
  data: PanelData,
  x: number,
  y: number,
  w: number,
  h: number,
  start: number,
  end: number,
): string {
  const { panel } = data;
  const parts: string[] = [];
  parts.push(
    `<rect x="${x + 3}" y="${y + 3}" width="${w - 6}" height="${h - 6}" rx="4" fill="#181b1f" stroke="#2c3235"/>`,
  );
  const unitNote = panel.unit ? ` (${panel.unit})` : '';
  parts.push(
    `<text x="${x + 12}" y="${y + 22}" font-family="${FONT}" font-size="14" font-weight="bold" fill="#d8d9da">${esc(
      panel.title,
    )} <tspan font-weight="normal" fill="#8e8e8e" font-size="11">${esc(unitNote)}${
      panel.row ? ` · ${esc(panel.row)}` : ''
    }</tspan></text>`,
  );
  const inner = { x: x + 12, y: y + 32, w: w - 24, h: h - 44 };
  const series = data.series.filter((s) => s.points.length > 0);
  if (data.error !== undefined || series.length === 0) {
    const text = data.error !== undefined ? `query error: ${data.error}` : 'No data';
    parts.push(
      `<text x="${x + w / 2}" y="${y + h / 2}" text-anchor="middle" font-family="${FONT}" font-size="13" fill="${
        data.error ? '#E24D42' : '#8e8e8e'
      }">${esc(text.slice(0, Math.floor(w / 7)))}</text>`,
    );
    return parts.join('\n');
  }
  if (panel.type === 'stat' || panel.type === 'gauge' || panel.type === 'bargauge') {
    if (series.length === 1) {
      const s = series[0]!;
      const big = Math.min(40, inner.h * 0.5);
      parts.push(
        `<text x="${x + w / 2}" y="${inner.y + inner.h / 2 + big / 3}" text-anchor="middle" font-family="${FONT}" font-size="${big}" font-weight="bold" fill="${PALETTE[0]!}">${esc(
          formatValue(s.points[s.points.length - 1]![1], panel.unit),
        )}</text>`,
        `<text x="${x + w / 2}" y="${inner.y + inner.h - 2}" text-anchor="middle" font-family="${FONT}" font-size="11" fill="#8e8e8e">${esc(
          s.name.slice(0, Math.floor(inner.w / 7)),
        )}</text>`,
      );
      return parts.join('\n');
    }
    // Several values: name and last value per cell, in as many columns as the height needs.
    const perColumn = Math.max(1, Math.floor(inner.h / 20));
    const columns = Math.ceil(series.length / perColumn);
    const cellW = inner.w / columns;
    series.forEach((s, i) => {
      const cx = inner.x + Math.floor(i / perColumn) * cellW;
      const cy = inner.y + 14 + (i % perColumn) * 20;
      const color = PALETTE[i % PALETTE.length]!;
      parts.push(
        `<text x="${cx}" y="${cy}" font-family="${FONT}" font-size="11" fill="#c7d0d9">${esc(
          s.name.slice(0, Math.max(4, Math.floor(cellW / 6.5) - 8)),
        )}</text>`,
        `<text x="${cx + cellW - 8}" y="${cy}" text-anchor="end" font-family="${FONT}" font-size="13" font-weight="bold" fill="${color}">${esc(
          formatValue(s.points[s.points.length - 1]![1], panel.unit),
        )}</text>`,
      );
    });
    return parts.join('\n');
  }
  // Time series: legend at the bottom, axes left and below.
  const legendRows = Math.min(4, Math.ceil(series.length / 3));
  const legendH = legendRows * 14 + 4;
  const plot = { x: inner.x + 62, y: inner.y + 4, w: inner.w - 66, h: inner.h - legendH - 22 };
  const values = series.flatMap((s) => s.points.map((p) => p[1]).filter(Number.isFinite));
  let min = Math.min(...values, 0);
  let max = Math.max(...values);
  if (!Number.isFinite(max)) max = 1;
  if (!Number.isFinite(min)) min = 0;
  const ticks = niceTicks(min, max);
  min = ticks[0]!;
  max = ticks[ticks.length - 1]!;
  const sx = (t: number) => plot.x + ((t - start) / Math.max(1, end - start)) * plot.w;
  const sy = (v: number) => plot.y + plot.h - ((v - min) / (max - min || 1)) * plot.h;
  for (const t of ticks) {
    parts.push(
      `<line x1="${plot.x}" x2="${plot.x + plot.w}" y1="${sy(t)}" y2="${sy(t)}" stroke="#2c3235"/>`,
      `<text x="${plot.x - 4}" y="${sy(t) + 4}" text-anchor="end" font-family="${FONT}" font-size="10" fill="#8e8e8e">${esc(
        formatValue(t, panel.unit),
      )}</text>`,
    );
  }
  const timeTicks = 5;
  for (let i = 0; i <= timeTicks; i++) {
    const t = start + ((end - start) * i) / timeTicks;
    parts.push(
      `<text x="${sx(t)}" y="${plot.y + plot.h + 13}" text-anchor="middle" font-family="${FONT}" font-size="10" fill="#8e8e8e">${clock(
        t,
      )}</text>`,
    );
  }
  const clip = `clip-${Math.round(x)}-${Math.round(y)}`;
  parts.push(
    `<clipPath id="${clip}"><rect x="${plot.x - 2}" y="${plot.y - 2}" width="${plot.w + 4}" height="${plot.h + 4}"/></clipPath>`,
    `<g clip-path="url(#${clip})">`,
  );
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length]!;
    // Break the line where a value is missing or not finite (as Grafana does).
    const segments: string[][] = [[]];
    let prevT = -Infinity;
    for (const [t, v] of s.points) {
      if (!Number.isFinite(v) || t - prevT > 10) segments.push([]);
      if (Number.isFinite(v)) segments[segments.length - 1]!.push(`${sx(t).toFixed(1)},${sy(v).toFixed(1)}`);
      prevT = t;
    }
    for (const seg of segments) {
      if (seg.length === 1)
        parts.push(
          `<circle cx="${seg[0]!.split(',')[0]}" cy="${seg[0]!.split(',')[1]}" r="2" fill="${color}"/>`,
        );
      else if (seg.length > 1)
        parts.push(`<polyline points="${seg.join(' ')}" fill="none" stroke="${color}" stroke-width="1.6"/>`);
    }
  });
  parts.push('</g>');
  const shown = series.slice(0, legendRows * 3);
  const colW = inner.w / 3;
  shown.forEach((s, i) => {
    const lx = inner.x + (i % 3) * colW;
    const ly = plot.y + plot.h + 30 + Math.floor(i / 3) * 14;
    const label =
      i === shown.length - 1 && series.length > shown.length
        ? `${s.name} … +${series.length - shown.length} more`
        : s.name;
    parts.push(
      `<rect x="${lx}" y="${ly - 8}" width="10" height="3" fill="${PALETTE[i % PALETTE.length]!}"/>`,
      `<text x="${lx + 14}" y="${ly - 3}" font-family="${FONT}" font-size="10" fill="#c7d0d9">${esc(
        label.slice(0, Math.floor(colW / 6.2) - 2),
      )}</text>`,
    );
  });
  return parts.join('\n');
}

/** The SVG of one dashboard from its panels' data. */
export function dashboardSvg(
  dashboard: Dashboard,
  data: readonly PanelData[],
  start: number,
  end: number,
): string {
  const bottom = Math.max(0, ...data.map((d) => d.panel.gridPos.y + d.panel.gridPos.h));
  const height = HEADER + bottom * ROW_H + 10;
  const body = data.map((d) =>
    drawPanel(
      d,
      d.panel.gridPos.x * COL,
      HEADER + d.panel.gridPos.y * ROW_H,
      d.panel.gridPos.w * COL,
      d.panel.gridPos.h * ROW_H,
      start,
      end,
    ),
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">
<rect width="100%" height="100%" fill="#111217"/>
<text x="16" y="32" font-family="${FONT}" font-size="22" font-weight="bold" fill="#d8d9da">${esc(dashboard.title)}</text>
<text x="16" y="54" font-family="${FONT}" font-size="12" fill="#8e8e8e">${esc(
    `${dashboard.file} · uid ${dashboard.uid} · ${clock(start)}–${clock(end)} UTC · rendered from Prometheus query_range (Grafana cannot run here)`,
  )}</text>
${body.join('\n')}
</svg>`;
}

/** Runs every panel's queries over [start, end] (variables: All) and returns the data to draw. */
export async function panelData(
  prom: Prometheus,
  dashboard: Dashboard,
  start: number,
  end: number,
): Promise<PanelData[]> {
  const resolved = await resolveVariables(prom, dashboard);
  const values = allValues(resolved);
  const step = Math.max(1, Math.round((end - start) / 200));
  const out: PanelData[] = [];
  for (const panel of dashboard.panels) {
    const series: Series[] = [];
    let error: string | undefined;
    for (const target of panel.targets) {
      try {
        const result = await prom.queryRange(substitute(target.expr, values), start, end, step);
        for (const sample of result.result) {
          series.push({
            name: legendName(sample, target.legendFormat),
            points: (sample.values ?? []).map(([t, v]) => [t, Number(v)] as [number, number]),
          });
        }
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
    }
    out.push({ panel, series, error });
  }
  return out;
}

/** Renders every dashboard into `outDir` as `<file>.png`; returns the paths written. */
export async function renderDashboards(options: {
  prom: Prometheus;
  dashboards: readonly Dashboard[];
  start: number;
  end: number;
  outDir: string;
}): Promise<string[]> {
  mkdirSync(options.outDir, { recursive: true });
  const files: string[] = [];
  for (const dashboard of options.dashboards) {
    const data = await panelData(options.prom, dashboard, options.start, options.end);
    const svg = dashboardSvg(dashboard, data, options.start, options.end);
    const file = join(options.outDir, dashboard.file.replace(/\.json$/, '.png'));
    writeFileSync(
      file,
      await sharp(Buffer.from(svg)).png({ palette: true, quality: 90, compressionLevel: 9 }).toBuffer(),
    );
    files.push(file);
  }
  return files;
}
