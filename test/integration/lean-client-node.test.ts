import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliPath } from '../helpers/cli.js';

/**
 * spec-guard's processes load client-node's KubeConfig without its generated API (about
 * 16 MB of live heap): what the built entry point resolves, recorded by a hook loaded first
 * (module hooks run last-registered first, so it sees what the program's own hook passes on).
 */
const RECORDER = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const urls = [];
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); urls.push(r.url); return r; } });
process.on('exit', () => writeFileSync(process.env.RESOLVED_FILE, JSON.stringify(urls)));
`)}`;

function resolvedBy(entry: string, args: string[]): string[] {
  const file = join(mkdtempSync(join(tmpdir(), 'spec-guard-resolved-')), 'urls.json');
  const run = spawnSync(process.execPath, ['--import', RECORDER, entry, ...args], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, RESOLVED_FILE: file } });
  expect(run.status).toBe(0);
  return JSON.parse(readFileSync(file, 'utf8')) as string[];
}

const generated = (urls: string[]) => urls.filter((url) => url.includes('/@kubernetes/client-node/dist/gen/'));

describe('the generated API of client-node', () => {
  it('is not loaded by the entry point, which still loads KubeConfig and every command', () => {
    const urls = resolvedBy(cliPath, ['--help']);
    expect(urls).toContainEqual(expect.stringMatching(/\/@kubernetes\/client-node\/dist\/config\.js$/));
    expect(urls).toContainEqual(expect.stringMatching(/\/dist\/src\/commands\/serve\.js$/));
    expect(generated(urls)).toEqual([]);
  });

  it('is loaded by the same program without the entry point hook (the control)', () => {
    const urls = resolvedBy(fileURLToPath(new URL('../../dist/src/main.js', import.meta.url)), ['--help']);
    expect(generated(urls).length).toBeGreaterThan(100);
  });

  it('is replaced by a module whose exports say why, for the one caller left out (makeApiClient)', () => {
    const script = `
      const { leaveOutGeneratedApi } = await import(${JSON.stringify(new URL('../../dist/src/kube/lean-client-node.js', import.meta.url).href)});
      leaveOutGeneratedApi();
      const { KubeConfig } = await import('@kubernetes/client-node/dist/config.js');
      const kc = new KubeConfig();
      kc.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:6443' }], users: [{ name: 'u', token: 't0ken' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
      const options = {};
      await kc.applyToHTTPSOptions(options);
      console.log(JSON.stringify(options.headers));
      try { kc.makeApiClient(class {}); } catch (err) { console.log(err.message); }`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000, cwd: fileURLToPath(new URL('../../', import.meta.url)) });
    expect(run.stderr).toBe('');
    const [headers, refusal] = run.stdout.trim().split('\n');
    expect(JSON.parse(headers!)).toEqual({ Authorization: 'Bearer t0ken' });
    expect(refusal).toMatch(/generated API clients are not loaded in spec-guard.*use KubeClient/);
  });
});
