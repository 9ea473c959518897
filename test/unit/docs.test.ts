import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { Metrics } from '../../src/metrics/index.js';

// The documentation a platform engineer reads: the README's first screen, every page linked
// from it, and references that cannot drift from the code.
const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
/** The longest cell of the README's benchmark table: what, the headline figure, the target, met or not. */
const MAX_CELL_CHARS = 280;

describe('documentation', () => {
  const readme = read('README.md');

  it('the README starts with what spec-guard is and the two commands, then the layout table, before install', () => {
    const lines = readme.split('\n');
    const fence = lines.indexOf('```sh');
    expect(fence).toBeGreaterThan(0);
    expect(fence).toBeLessThan(15);
    expect(lines[fence + 1]).toMatch(/^npm run demo\b/);
    expect(lines[fence + 2]).toMatch(/^npm test\b/);
    const order = ['## Which layout', '## Compatibility', '## Install', '## Documentation', '## Benchmarks'].map((h) => lines.indexOf(h));
    expect(order.every((at) => at > fence)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(lines.length).toBeLessThan(150);
  });

  it('links every page of docs/ and CONTRIBUTING.md; every relative link resolves', () => {
    for (const page of readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md'))) expect(readme).toContain(`](docs/${page}`);
    expect(readme).toContain('](CONTRIBUTING.md)');
    const pages = ['README.md', 'CONTRIBUTING.md', ...readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    for (const page of pages) {
      const base = new URL(page, root);
      for (const [, target] of read(page).matchAll(/\]\(([^)#:]+\.md)(#[^)]*)?\)/g)) {
        expect({ page, target, exists: (() => { try { readFileSync(new URL(target!, base)); return true; } catch { return false; } })() }).toEqual({ page, target, exists: true });
      }
    }
  });

  it('one line per benchmark in the README, with its target and whether it is met', () => {
    const rows = readme.split('## Benchmarks')[1]!.split('\n').filter((l) => l.startsWith('| `bench:'));
    const benches = Object.keys(JSON.parse(read('package.json')).scripts as Record<string, string>).filter((s) => s.startsWith('bench:'));
    expect(rows.map((r) => /`(bench:[a-z-]+)`/.exec(r)![1]).sort()).toEqual(benches.sort());
    for (const row of rows) expect(row.split('|').filter(Boolean)).toHaveLength(4);
    // A headline, not a history: each round's figures go to docs/benchmarks.md.
    const longCells = rows.flatMap((row) => row.split('|').filter(Boolean).map((cell) => cell.trim()).filter((cell) => cell.length > MAX_CELL_CHARS));
    expect(longCells).toEqual([]);
  });

  it('the metrics reference in docs/operations.md lists exactly the metrics spec-guard registers', () => {
    const registered = (new Metrics(false).registry.getMetricsAsArray() as Array<{ name: string }>).map((m) => m.name).filter((n) => n.startsWith('spec_guard_'));
    const documented = [...read('docs/operations.md').matchAll(/^\| `(spec_guard_[a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(registered.sort());
  });
});

describe('the release', () => {
  it('one version everywhere: package.json, the chart, the kustomize image tag and the newest CHANGELOG release', () => {
    const version = JSON.parse(read('package.json')).version as string;
    expect(read('charts/spec-guard/Chart.yaml')).toMatch(new RegExp(`^version: ${version}$[\\s\\S]*^appVersion: ${version}$`, 'm'));
    expect(read('manifests/base/kustomization.yaml')).toContain(`newTag: ${version}`);
    expect(/^## (\d+\.\d+\.\d+)/m.exec(read('CHANGELOG.md'))![1]).toBe(version);
    expect(read('CHANGELOG.md')).toMatch(new RegExp(`## ${version.replace(/\./g, '\\.')}[^\\n]*\\n\\n### Upgrade notes`));
  });
});
