import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { createCA, createServingCert } from '../../src/certs/index.js';
import { runCli, startStandalone, type Daemon } from '../helpers/cli.js';
import { servedCertificate } from '../helpers/tls.js';

const dir = mkdtempSync(join(tmpdir(), 'spec-guard-tls-'));
const config = join(dir, 'config.yaml');
writeFileSync(config, 'resources:\n  - group: argoproj.io\n    resource: applications\n');
const certFile = join(dir, 'tls.crt');
const keyFile = join(dir, 'tls.key');
const ca = createCA();

function writePair(pair: { cert: string; key: string }): void {
  writeFileSync(certFile, pair.cert);
  writeFileSync(keyFile, pair.key);
}

jest.setTimeout(30_000);

const daemons: Daemon[] = [];
afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop('SIGKILL')));
});

async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('certificates from files (cert-manager and the like)', () => {
  it('unreadable or mismatched files stop serve at start with a message naming the file', () => {
    const missing = runCli(['serve', '--standalone', '--config', config, '--tls-cert-file', join(dir, 'nope.crt'), '--tls-key-file', keyFile]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`cannot read the TLS certificate file ${join(dir, 'nope.crt')}: ENOENT`);

    const a = createServingCert(ca, ['127.0.0.1']);
    const b = createServingCert(ca, ['127.0.0.1']);
    writeFileSync(certFile, a.cert);
    writeFileSync(keyFile, b.key);
    const mismatched = runCli(['serve', '--standalone', '--config', config, '--tls-cert-file', certFile, '--tls-key-file', keyFile]);
    expect(mismatched.code).toBe(1);
    expect(mismatched.stderr).toContain('the private key does not match the certificate');
  });

  it('a renewed pair is served without a restart; a broken one is logged and the previous kept', async () => {
    const first = createServingCert(ca, ['127.0.0.1']);
    writePair(first);
    const daemon = startStandalone(config, ['--tls-cert-file', certFile, '--tls-key-file', keyFile]);
    daemons.push(daemon);
    const { webhookPort } = JSON.parse(await daemon.waitForLog(/spec-guard ready/)) as { webhookPort: number };
    const fingerprint = async () => (await servedCertificate(webhookPort)).fingerprint256;
    const firstPrint = await fingerprint();

    const second = createServingCert(ca, ['127.0.0.1']);
    writePair(second);
    await waitUntil('the renewed certificate to be served', async () => (await fingerprint()) !== firstPrint, 10_000);
    await daemon.waitForLog(/serving certificate reloaded from files/);
    const secondPrint = await fingerprint();

    writeFileSync(certFile, 'garbage');
    const line = await daemon.waitForLog(/cannot be served.*still serving the previous certificate/, 10_000);
    expect(line).toContain(certFile);
    expect(await fingerprint()).toBe(secondPrint);
    expect(daemon.child.exitCode).toBeNull();
    expect(await daemon.stop('SIGTERM')).toBe(0);
  });
});
