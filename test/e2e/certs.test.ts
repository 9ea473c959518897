import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { bundleCarries, CA_SECRET, createCA, createServingCert, splitPem, TLS_SECRET } from '../../src/certs/index.js';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import { cliPath } from '../helpers/cli.js';
import { servedCertificate } from '../helpers/tls.js';
import {
  ALICE,
  CONTROLLER,
  admin,
  agentApply,
  fixture,
  getJson,
  inCluster,
  kubectl,
  kubectlOk,
  startSpecGuard,
  state,
  unregister,
  waitFor,
  type SpecGuard,
} from './harness.js';

jest.setTimeout(180_000);

let sg: SpecGuard;
const secretData = (name: string, key: string): string =>
  Buffer.from(kubectlOk([], ['get', 'secret', '-n', 'spec-guard', name, '-o', `jsonpath={.data.${key.replace(/\./g, '\\.')}}`]), 'base64').toString('utf8');
const configBundle = (kind: string, index = 0): string =>
  Buffer.from(kubectlOk([], ['get', kind, 'spec-guard', '-o', `jsonpath={.webhooks[${index}].clientConfig.caBundle}`]), 'base64').toString('utf8');

function rotationCounts(metrics: string): { serving: number; ca: number } {
  const count = (kind: string) => Number(new RegExp(`spec_guard_certificate_rotations_total\\{certificate="${kind}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
  return { serving: count('serving'), ca: count('ca') };
}

function aliceEditRefused(): boolean {
  const r = kubectl(ALICE, ['edit', 'application', '-n', 'argocd', 'certs-app'], {
    env: { KUBE_EDITOR: fixture('edit-target-revision.sh'), TARGET_REVISION: 'evil' },
  });
  return r.code !== 0 && /denied (the )?request/.test(r.stderr);
}

/** Runs the CLI without blocking the event loop (the load generator must keep going). */
function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c));
    child.stderr.on('data', (c: Buffer) => (output += c));
    // 'close': after the output is read to its end ('exit' can come first).
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * 50 writes/s through the apiserver, each of which needs the webhook: alice changes a
 * spec in the warn namespace (guard webhook, failurePolicy Fail: a TLS failure fails the
 * write), the agent changes a spec (stamp webhook, Ignore: a failure leaves a stale stamp,
 * which is counted too).
 */
function startLoad() {
  const failures: string[] = [];
  let writes = 0;
  let stop = false;
  const alice = { 'Impersonate-User': 'alice', 'Impersonate-Group': 'developers' };
  const agent = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-agent-agent' };
  const loop = async (who: 'alice' | 'agent') => {
    const kube = await admin();
    let lastStamp: string | undefined;
    for (let i = 0; !stop; i++) {
      const started = Date.now();
      const path = `/apis/argoproj.io/v1alpha1/namespaces/${who === 'alice' ? 'apps-warn' : 'argocd'}/applications/certs-load`;
      try {
        const written = await kube.request<Record<string, any>>('PATCH', path, {
          body: { spec: { source: { targetRevision: `${who}-${i}` } } },
          contentType: 'application/merge-patch+json',
          headers: who === 'alice' ? alice : agent,
          query: who === 'agent' ? { fieldManager: 'argocd-agent' } : undefined,
        });
        if (who === 'agent') {
          const stamp = written.metadata.annotations?.[STAMP_ANNOTATION] as string | undefined;
          if (!stamp || stamp === lastStamp) failures.push(`agent write ${i} was not stamped`);
          lastStamp = stamp;
        }
        writes++;
      } catch (err) {
        failures.push(`${who} write ${i}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 40 - (Date.now() - started))));
    }
  };
  const done = Promise.all([loop('alice'), loop('agent')]);
  return {
    failures,
    writes: () => writes,
    async stop() {
      stop = true;
      await done;
    },
  };
}

(inCluster ? describe.skip : describe)('certificates and registration that heal themselves', () => {
  beforeAll(async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    sg = await startSpecGuard(fixture('config.yaml'), ['--ca-propagation-seconds', '2']);
    agentApply('certs-app', 'argocd');
    agentApply('certs-load', 'argocd');
    agentApply('certs-load', 'apps-warn');
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'applications', 'certs-app', 'certs-load', '-n', 'argocd', '--wait=false', '--ignore-not-found']);
    kubectl([], ['delete', 'applications', 'certs-load', '-n', 'apps-warn', '--wait=false', '--ignore-not-found']);
  });

  it('1. a deleted MutatingWebhookConfiguration is back within 5 s, and alice is refused again', async () => {
    expect(aliceEditRefused()).toBe(true);
    kubectlOk([], ['delete', 'mutatingwebhookconfiguration', 'spec-guard']);
    const started = Date.now();
    await waitFor('the configuration to be recreated', () => kubectl([], ['get', 'mutatingwebhookconfiguration', 'spec-guard']).code === 0, 5000, 50);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(aliceEditRefused()).toBe(true);
    await sg.waitForLog(/admission object restored: it was deleted.*MutatingWebhookConfiguration/);
  });

  it('2. a corrupted caBundle is corrected within 5 s', async () => {
    const ca = secretData(CA_SECRET, 'tls.crt');
    const junk = Buffer.from('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n').toString('base64');
    kubectlOk([], ['patch', 'validatingwebhookconfiguration', 'spec-guard', '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: junk }])]);
    const started = Date.now();
    await waitFor('the caBundle to be corrected', () => bundleCarries(configBundle('validatingwebhookconfiguration'), ca), 5000, 50);
    expect(Date.now() - started).toBeLessThan(5000);
    await sg.waitForLog(/admission object restored: it was changed.*ValidatingWebhookConfiguration/);
    const repairs = /spec_guard_webhook_configuration_repairs_total\{kind="ValidatingWebhookConfiguration"\} (\d+)/.exec(await sg.metrics());
    expect(Number(repairs?.[1])).toBeGreaterThanOrEqual(1);
  });

  it('3. under 50 writes/s, a serving rotation and then a CA rotation: zero failed writes, new certificates served without a restart', async () => {
    const pid = sg.child.pid;
    const rotationsBefore = rotationCounts(await sg.metrics());
    const first = await servedCertificate(sg.webhookPort);
    const oldCa = secretData(CA_SECRET, 'tls.crt');
    const load = startLoad();
    await new Promise((r) => setTimeout(r, 1500));

    const serving = await cli(['rotate', '--kubeconfig', state().adminKubeconfig, '--timeout', '60']);
    expect(serving.output).toContain('serving certificate rotated');
    expect(serving.code).toBe(0);
    const second = await waitFor('the new serving certificate to be served', async () => {
      const c = await servedCertificate(sg.webhookPort);
      return c.fingerprint256 !== first.fingerprint256 && c;
    }, 5000);
    expect(second.verify(new X509Certificate(oldCa).publicKey)).toBe(true);
    await new Promise((r) => setTimeout(r, 1000));

    const caRotation = await cli(['rotate', '--ca', '--kubeconfig', state().adminKubeconfig, '--timeout', '90']);
    expect(caRotation.output).toContain('serving certificate rotated');
    expect(caRotation.code).toBe(0);
    const newCa = secretData(CA_SECRET, 'tls.crt');
    expect(newCa).not.toBe(oldCa);
    const third = await waitFor('a certificate from the new CA to be served', async () => {
      const c = await servedCertificate(sg.webhookPort);
      return c.verify(new X509Certificate(newCa).publicKey) && c;
    }, 5000);
    expect(third.fingerprint256).not.toBe(second.fingerprint256);
    await new Promise((r) => setTimeout(r, 1500));
    await load.stop();

    expect(load.failures).toEqual([]);
    expect(load.writes()).toBeGreaterThan(100);
    // Both CAs stay trusted until the old one expires.
    for (const kind of ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration']) {
      for (const index of [0, 1]) {
        const bundle = configBundle(kind, index);
        expect(bundleCarries(bundle, newCa) && bundleCarries(bundle, oldCa)).toBe(true);
      }
    }
    expect(sg.child.pid).toBe(pid);
    expect(sg.child.exitCode).toBeNull();
    expect(sg.logs()).toMatch(/serving certificate reloaded/);
    expect(sg.logs()).toMatch(/new CA issued/);
    const rotations = rotationCounts(await sg.metrics());
    expect(rotations.ca - rotationsBefore.ca).toBe(1);
    expect(rotations.serving - rotationsBefore.serving).toBe(2);
  });

  it('4. a serving Secret broken by another tool, expired or deleted is repaired, with a log line, and admission goes on', async () => {
    const tls = () => secretData(TLS_SECRET, 'tls.crt');
    const valid = () => {
      try {
        return new X509Certificate(tls()).verify(new X509Certificate(secretData(CA_SECRET, 'tls.crt')).publicKey);
      } catch {
        return false;
      }
    };
    kubectlOk([], ['patch', 'secret', '-n', 'spec-guard', TLS_SECRET, '--type=merge', '-p', JSON.stringify({ data: { 'tls.crt': Buffer.from('garbage').toString('base64') } })]);
    await waitFor('the garbage certificate to be replaced', valid, 5000);
    await sg.waitForLog(/"serving certificate issued".*unparseable certificate/, 5000);

    const ca = { cert: secretData(CA_SECRET, 'tls.crt'), key: secretData(CA_SECRET, 'tls.key') };
    const expired = createServingCert(ca, ['127.0.0.1'], 1, new Date(Date.now() - 2 * 24 * 3600 * 1000));
    const encoded = { 'tls.crt': Buffer.from(expired.cert).toString('base64'), 'tls.key': Buffer.from(expired.key).toString('base64') };
    kubectlOk([], ['patch', 'secret', '-n', 'spec-guard', TLS_SECRET, '--type=merge', '-p', JSON.stringify({ data: encoded })]);
    await waitFor('the expired certificate to be replaced', () => valid() && !tls().includes(expired.cert.split('\n')[1]!), 5000);
    await sg.waitForLog(/"serving certificate issued".*expired/, 5000);

    kubectlOk([], ['delete', 'secret', '-n', 'spec-guard', TLS_SECRET]);
    await waitFor('the deleted Secret to be recreated', () => kubectl([], ['get', 'secret', '-n', 'spec-guard', TLS_SECRET]).code === 0 && valid(), 5000);
    await waitFor('alice refused with the repaired certificate', () => aliceEditRefused(), 10_000, 500);
    expect(sg.child.exitCode).toBeNull();
  });

  it('5. a CA Secret overwritten by another tool gets a new CA, trusted before it serves', async () => {
    const oldCa = secretData(CA_SECRET, 'tls.crt');
    kubectlOk([], ['patch', 'secret', '-n', 'spec-guard', CA_SECRET, '--type=merge', '-p', JSON.stringify({ data: { 'tls.key': Buffer.from('not a key').toString('base64') } })]);
    await sg.waitForLog(/"new CA issued.*does not match|"new CA issued.*unparseable private key/, 10_000);
    const newCa = secretData(CA_SECRET, 'tls.crt');
    expect(newCa).not.toBe(oldCa);
    // The old CA stays in the bundle: the certificate it signed keeps serving until the switch.
    const bundle = secretData(CA_SECRET, 'ca-bundle.crt');
    expect(bundleCarries(bundle, oldCa) && bundleCarries(bundle, newCa)).toBe(true);
    expect(splitPem(bundle)[0]).toBe(splitPem(newCa)[0]);
    await waitFor('a certificate from the new CA to be served', async () => (await servedCertificate(sg.webhookPort)).verify(new X509Certificate(newCa).publicKey), 15_000, 200);
    expect(aliceEditRefused()).toBe(true);
  });
});

(inCluster ? describe.skip : describe)('certificates from files, caBundle left to a CA injector', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-files-'));
  let files: SpecGuard | undefined;

  afterAll(async () => {
    await files?.stop();
    unregister();
    kubectl([], ['delete', 'application', 'certs-files', '-n', 'argocd', '--wait=false', '--ignore-not-found']);
  });

  it('6. an edited configuration is restored and the injected caBundle kept', async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    const ca = createCA('injected-ca');
    const pair = createServingCert(ca, ['127.0.0.1']);
    writeFileSync(join(dir, 'tls.crt'), pair.cert);
    writeFileSync(join(dir, 'tls.key'), pair.key);
    files = await startSpecGuard(fixture('config.yaml'), ['--tls-cert-file', join(dir, 'tls.crt'), '--tls-key-file', join(dir, 'tls.key')]);
    expect(configBundle('validatingwebhookconfiguration')).toBe('');
    // What cert-manager's cainjector does:
    const injected = Buffer.from(ca.cert).toString('base64');
    for (const kind of ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration']) {
      const patch = [0, 1].map((i) => ({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: injected }));
      kubectlOk([], ['patch', kind, 'spec-guard', '--type=json', '-p', JSON.stringify(patch)]);
    }
    // ... and the annotation that asks it to (cert-manager's cainjector reads it).
    kubectlOk([], ['annotate', 'validatingwebhookconfiguration', 'spec-guard', 'cert-manager.io/inject-ca-from=spec-guard/spec-guard-serving']);
    agentApply('certs-files', 'argocd');
    kubectlOk([], ['patch', 'validatingwebhookconfiguration', 'spec-guard', '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/webhooks/0/timeoutSeconds', value: 29 }])]);
    await waitFor('the edit to be undone', () => kubectl([], ['get', 'validatingwebhookconfiguration', 'spec-guard', '-o', 'jsonpath={.webhooks[0].timeoutSeconds}']).stdout === '3', 5000, 50);
    expect(bundleCarries(configBundle('validatingwebhookconfiguration'), ca.cert)).toBe(true);
    expect(getJson(['validatingwebhookconfiguration', 'spec-guard']).metadata.annotations['cert-manager.io/inject-ca-from']).toBe('spec-guard/spec-guard-serving');
    // The controller's spec writes are left to the webhook by the policy: this one must reach it over the injected CA.
    const controller = kubectl(CONTROLLER, ['patch', 'application', '-n', 'argocd', 'certs-files', '--type=merge', '-p', '{"spec":{"project":"other"}}']);
    expect(controller.code).not.toBe(0);
    expect(controller.stderr).toContain('admission webhook "guard.spec-guard.io" denied the request');
  });
});
