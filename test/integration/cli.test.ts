import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { review } from '../helpers/admission.js';
import { runCli, startStandalone, type Daemon } from '../helpers/cli.js';

// Each test starts spec-guard as a process of its own: on a shared 2-core machine compiling a
// kube-apiserver beside the suite, that can take longer than the default 5 s. A hang still fails.
jest.setTimeout(30_000);

const dir = mkdtempSync(join(tmpdir(), 'spec-guard-cli-'));
const goodConfig = join(dir, 'good.yaml');
writeFileSync(goodConfig, 'resources:\n  - group: argoproj.io\n    resource: applications\n    normalizer: argocd-application\n');
const badConfig = join(dir, 'bad.yaml');
writeFileSync(badConfig, 'resources:\n  - group: argoproj.io\n    resource: applications\n  - group: argoproj.io\n    resource: appprojects\n    mode: block\n');

const daemons: Daemon[] = [];
afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop('SIGKILL')));
});

describe('spec-guard CLI', () => {
  it('prints help for every subcommand', () => {
    for (const command of ['serve', 'check-config', 'manifests', 'status', 'rotate']) {
      const { code, stdout } = runCli([command, '--help']);
      expect(code).toBe(0);
      expect(stdout).toContain(`Usage: spec-guard ${command}`);
    }
    expect(runCli(['--help']).stdout).toContain('Commands:');
  });

  it('the synopsis in docs/cli.md and the chart’s NOTES.txt name exactly the flags and the binary the CLI has', () => {
    const root = new URL('../../', import.meta.url);
    const reference = readFileSync(new URL('docs/cli.md', root), 'utf8');
    const synopsis = /# Command line\n\n```\n([\s\S]*?)```/.exec(reference)![1]!;
    // A flag is what a flag line of the help starts with, or what a usage line names.
    const onLine = (l: string) => (/^\s{1,4}--/.test(l) ? [l.trim().split(/\s/)[0]!] : /^\s*(Usage:|spec-guard|\[)/.test(l) ? (l.match(/--[a-z][a-z-]*/g) ?? []) : []);
    const flags = (text: string) => [...new Set(text.split('\n').flatMap(onLine))].filter((f) => f !== '--help').sort();
    // A command's lines: those that start with it, and the indented ones that continue them.
    const byCommand = new Map<string, string>();
    let current = '';
    for (const line of synopsis.split('\n')) {
      if (!line.startsWith(' ')) current = line.split(' ')[1] ?? '';
      byCommand.set(current, `${byCommand.get(current) ?? ''}\n${line}`);
    }
    for (const command of ['serve', 'check-config', 'manifests', 'status', 'rotate']) {
      expect({ command, flags: flags(byCommand.get(command) ?? '') }).toEqual({ command, flags: flags(runCli([command, '--help']).stdout) });
    }
    // The image has no spec-guard on its PATH: NOTES.txt runs the CLI as the image's entrypoint does.
    const entrypoint = (JSON.parse(/^ENTRYPOINT (.*)$/m.exec(readFileSync(new URL('Dockerfile', root), 'utf8'))![1]!) as string[]).join(' ');
    const notes = readFileSync(new URL('charts/spec-guard/templates/NOTES.txt', root), 'utf8');
    const install = readFileSync(new URL('docs/install.md', root), 'utf8');
    for (const text of [notes, install]) {
      expect(text).toMatch(/exec deploy\/spec-guard -- /);
      for (const exec of text.match(/exec deploy\/spec-guard -- .*/g) ?? []) expect(exec).toContain(`-- ${entrypoint} `);
    }
  });

  it('check-config prints the effective policy', () => {
    const { code, stdout } = runCli(['check-config', '--config', goodConfig]);
    expect(code).toBe(0);
    expect(stdout).toContain('mode: enforce');
    expect(stdout).toContain('- /spec');
  });

  it('a bad configuration exits 2 with one line per problem naming the path', () => {
    for (const command of [['check-config'], ['serve', '--standalone']]) {
      const { code, stderr } = runCli([...command, '--config', badConfig]);
      expect(code).toBe(2);
      expect(stderr).toContain(`${badConfig}: resources[1].mode: must be one of enforce, rewrite, warn, off`);
    }
  });

  it('a wrong flag exits 2 with the help', () => {
    const { code, stderr } = runCli(['serve', '--config', goodConfig, '--prot', '1']);
    expect(code).toBe(2);
    expect(stderr).toContain("Unknown option '--prot'");
    expect(stderr).toContain('Usage: spec-guard serve');
  });

  it('bad flag values exit 2, one line per flag, checked by one schema before anything starts', () => {
    const { code, stderr } = runCli(['serve', '--config', goodConfig, '--port', '70000', '--log-level', 'loud', '--webhook-url', 'http://example.com', '--lease-duration', '2']);
    expect(code).toBe(2);
    for (const line of [
      '--port: expected a port number 0-65535',
      '--log-level: expected debug, info, warn or error',
      '--webhook-url: must be an https:// URL (the apiserver calls webhooks over TLS)',
      '--lease-duration: expected whole seconds, at least 3',
    ]) {
      expect(stderr).toContain(line);
    }
    expect(runCli(['serve', '--config', goodConfig, '--tls-cert-file', 'c.pem']).stderr).toContain('--tls-cert-file: goes with --tls-key-file');
    expect(runCli(['serve']).stderr).toContain('--config: is required');
  });

  it('every subcommand checks its flags the same way, with the same messages for the flags they share', () => {
    const cases: Array<[string[], string]> = [
      [['status'], 'spec-guard status: --config: is required'],
      [['manifests'], 'spec-guard manifests: --config: is required'],
      [['check-config'], 'spec-guard check-config: --config: is required'],
      [['manifests', '--config', goodConfig, '--service-port', '70000'], '--service-port: expected a port number 0-65535'],
      [['manifests', '--config', goodConfig, '--webhook-url', 'http://x'], '--webhook-url: must be an https:// URL'],
      [['manifests', '--config', goodConfig, '--gitops'], '--gitops: goes with --rbac'],
      [['rotate', '--timeout', 'soon'], '--timeout: expected a number of seconds, 1 or more'],
      [['check-config', '--config', goodConfig, '--kubeconfig', 'k', '--in-cluster'], '--kubeconfig: excludes --in-cluster'],
      [['status', '--config', goodConfig, '--bogus'], "Unknown option '--bogus'"],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = runCli(args);
      expect({ args, code, said: stderr.includes(message) }).toEqual({ args, code: 2, said: true });
    }
  });

  it('without --standalone and without a reachable cluster, serve fails fast and says why', () => {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n',
    );
    const started = Date.now();
    const { code, stderr } = runCli(['serve', '--config', goodConfig, '--kubeconfig', kubeconfig, '--port', '0', '--metrics-port', '0']);
    expect(code).toBe(1);
    expect(stderr).toContain('cannot reach the Kubernetes API at https://127.0.0.1:1');
    expect(stderr).toContain('--standalone');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('serve --standalone answers admission over TLS and serves metrics on plain HTTP', async () => {
    const daemon = startStandalone(goodConfig);
    daemons.push(daemon);
    const ready = JSON.parse(await daemon.waitForLog(/spec-guard ready/)) as { webhookPort: number; metricsPort: number };
    const body = JSON.stringify(review('alice-delete'));
    const reply = await new Promise<string>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port: ready.webhookPort, path: '/validate', method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(JSON.parse(reply).response).toMatchObject({ allowed: false, status: { code: 403 } });
    const metrics = await (await fetch(`http://127.0.0.1:${ready.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/spec_guard_admission_requests_total\{webhook="validate",operation="DELETE",resource="applications.argoproj.io",decision="deny"\} 1/);
    expect(metrics).toContain('process_resident_memory_bytes');
    expect((await fetch(`http://127.0.0.1:${ready.metricsPort}/readyz`)).status).toBe(200);
    expect(await daemon.stop('SIGTERM')).toBe(0);
    expect(daemon.logs()).toContain('shutting down');
  });
});
