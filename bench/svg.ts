// Pictures the benches draw of their own figures (SVG, no dependency): bars side by side,
// cumulative distributions and lines through measured points. Each names the machine and the run it came from.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';

const WIDTH = 720;
const HEIGHT = 360;
const MARGIN = { left: 70, right: 20, top: 50, bottom: 70 };
const COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2'];

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Where and when: the machine (cores, memory, Node.js) and the time of the run. */
export function provenance(): string {
  const cpu = cpus();
  return `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node.js ${process.version}, ${new Date().toISOString().slice(0, 16)}Z`;
}

function frame(title: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="22" font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<text x="${MARGIN.left}" y="${HEIGHT - 8}" font-size="10" fill="#555">${escape(provenance())}</text>`,
    ...body,
    '</svg>',
  ].join('\n');
}

function axis(max: number, unit: string, plotHeight: number): string[] {
  const out: string[] = [];
  for (let i = 0; i <= 4; i++) {
    const y = MARGIN.top + plotHeight - (plotHeight * i) / 4;
    out.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${y + 4}" text-anchor="end">${Math.round((max * i) / 4)}</text>`);
  }
  out.push(`<text x="14" y="${MARGIN.top + plotHeight / 2}" transform="rotate(-90 14 ${MARGIN.top + plotHeight / 2})" text-anchor="middle">${escape(unit)}</text>`);
  return out;
}

/** Groups of bars side by side (e.g. per case: one bar per server), with their values written on them. */
export function barChart(title: string, unit: string, groups: Array<{ label: string; bars: Array<{ label: string; value: number }> }>): string {
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const max = Math.max(...groups.flatMap((g) => g.bars.map((b) => b.value))) * 1.1;
  const groupWidth = plotWidth / groups.length;
  const out = axis(max, unit, plotHeight);
  groups.forEach((group, g) => {
    const barWidth = (groupWidth * 0.8) / group.bars.length;
    group.bars.forEach((bar, b) => {
      const x = MARGIN.left + g * groupWidth + groupWidth * 0.1 + b * barWidth;
      const h = (plotHeight * bar.value) / max;
      const y = MARGIN.top + plotHeight - h;
      out.push(`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 4).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLOURS[b % COLOURS.length]}"/>`);
      out.push(`<text x="${(x + (barWidth - 4) / 2).toFixed(1)}" y="${(y - 4).toFixed(1)}" text-anchor="middle">${Math.round(bar.value)}</text>`);
    });
    out.push(`<text x="${(MARGIN.left + g * groupWidth + groupWidth / 2).toFixed(1)}" y="${MARGIN.top + plotHeight + 18}" text-anchor="middle">${escape(group.label)}</text>`);
  });
  (groups[0]?.bars ?? []).forEach((bar, b) => {
    const x = MARGIN.left + b * 200;
    out.push(`<rect x="${x}" y="${MARGIN.top + plotHeight + 30}" width="12" height="12" fill="${COLOURS[b % COLOURS.length]}"/>`);
    out.push(`<text x="${x + 16}" y="${MARGIN.top + plotHeight + 40}">${escape(bar.label)}</text>`);
  });
  return frame(title, out);
}

/** Cumulative distributions of several series of values (e.g. latencies, ms): the share at or below each value. */
export function cdfChart(title: string, unit: string, series: Array<{ label: string; values: number[] }>): string {
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const max = Math.max(1, ...series.flatMap((s) => s.values)) * 1.05;
  const out = axis(100, 'share of events, %', plotHeight);
  for (let i = 0; i <= 4; i++) {
    const x = MARGIN.left + (plotWidth * i) / 4;
    out.push(`<text x="${x}" y="${MARGIN.top + plotHeight + 16}" text-anchor="middle">${Math.round((max * i) / 4)}</text>`);
  }
  out.push(`<text x="${MARGIN.left + plotWidth / 2}" y="${MARGIN.top + plotHeight + 32}" text-anchor="middle">${escape(unit)}</text>`);
  series.forEach((s, i) => {
    const sorted = [...s.values].sort((a, b) => a - b);
    const points = sorted.map((v, k) => `${(MARGIN.left + (plotWidth * v) / max).toFixed(1)},${(MARGIN.top + plotHeight - (plotHeight * (k + 1)) / sorted.length).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${COLOURS[i % COLOURS.length]}" stroke-width="2" points="${points.join(' ')}"/>`);
    const x = MARGIN.left + i * 215;
    out.push(`<rect x="${x}" y="${MARGIN.top + plotHeight + 40}" width="12" height="12" fill="${COLOURS[i % COLOURS.length]}"/>`);
    out.push(`<text x="${x + 16}" y="${MARGIN.top + plotHeight + 50}">${escape(s.label)}</text>`);
  });
  return frame(title, out);
}

/**
 * Lines through measured points (x: e.g. object count; y: MiB or s), each point marked and
 * labelled with its value; a target, when given, is a dashed horizontal line.
 */
export function lineChart(title: string, xUnit: string, yUnit: string, series: Array<{ label: string; points: Array<[number, number]> }>, target?: { label: string; value: number }): string {
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const all = series.flatMap((s) => s.points);
  const maxX = Math.max(1, ...all.map(([x]) => x));
  const maxY = Math.max(1, target?.value ?? 0, ...all.map(([, y]) => y)) * 1.1;
  const at = (x: number, y: number) => [MARGIN.left + (plotWidth * x) / maxX, MARGIN.top + plotHeight - (plotHeight * y) / maxY] as const;
  const out = axis(maxY, yUnit, plotHeight);
  for (let i = 0; i <= 4; i++) {
    out.push(`<text x="${MARGIN.left + (plotWidth * i) / 4}" y="${MARGIN.top + plotHeight + 16}" text-anchor="middle">${Math.round((maxX * i) / 4)}</text>`);
  }
  out.push(`<text x="${MARGIN.left + plotWidth / 2}" y="${MARGIN.top + plotHeight + 32}" text-anchor="middle">${escape(xUnit)}</text>`);
  if (target) {
    const [, y] = at(0, target.value);
    out.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#e15759" stroke-dasharray="6 4"/>`);
    out.push(`<text x="${WIDTH - MARGIN.right - 4}" y="${(y - 5).toFixed(1)}" text-anchor="end" fill="#e15759">${escape(target.label)}</text>`);
  }
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const points = [...s.points].sort((a, b) => a[0] - b[0]).map(([x, y]) => at(x, y));
    out.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`);
    [...s.points].sort((a, b) => a[0] - b[0]).forEach(([, vy], k) => {
      const [x, y] = points[k]!;
      out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="${colour}"/>`);
      out.push(`<text x="${x.toFixed(1)}" y="${(y - 7).toFixed(1)}" text-anchor="middle">${vy < 10 ? vy.toFixed(1) : Math.round(vy)}</text>`);
    });
    const x = MARGIN.left + i * 215;
    out.push(`<rect x="${x}" y="${MARGIN.top + plotHeight + 40}" width="12" height="12" fill="${colour}"/>`);
    out.push(`<text x="${x + 16}" y="${MARGIN.top + plotHeight + 50}">${escape(s.label)}</text>`);
  });
  return frame(title, out);
}

/** Writes a picture where docs/benchmarks.md shows it (BENCH_SVG_DIR, default docs/benchmarks). */
export function savePicture(name: string, svg: string): string {
  const path = `${process.env.BENCH_SVG_DIR ?? new URL('../../docs/benchmarks', import.meta.url).pathname}/${name}`;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${svg}\n`);
  return path;
}
