import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';
import { expireLease, fixture, inCluster, startSpecGuard, unregister, waitFor, type SpecGuard } from './harness.js';

// An agent installed under another name than the configuration trusts is refused by its own
// guard: spec-guard says so at start, per identity, without refusing to run.
jest.setTimeout(60_000);

const TYPO = 'system:serviceaccount:argocd:argocd-agent-agnet';
const AGENT = 'system:serviceaccount:argocd:argocd-agent-agent';
const config = join(tmpdir(), `spec-guard-identity-${process.pid}.yaml`);
writeFileSync(config, readFileSync(fixture('config.yaml'), 'utf8').replace(`users: [${AGENT}]`, `users: [${AGENT}, ${TYPO}]`));

let sg: SpecGuard | undefined;
afterAll(async () => {
  await sg?.stop();
  unregister();
});

(inCluster ? describe.skip : describe)('trusted identities', () => {
  it('a trusted service account that does not exist is reported at start; the one that exists is not', async () => {
    expect(readFileSync(config, 'utf8')).toContain(TYPO);
    unregister();
    expireLease();
    sg = await startSpecGuard(config);
    await sg.waitForLog(new RegExp(`a trusted identity does not exist[^\\n]*${TYPO}`), 10_000);
    const missing = async (identity: string) => metricValue(parsePrometheusText(await sg!.metrics()), 'spec_guard_trusted_identity_missing', { identity });
    await waitFor('the gauge set', async () => (await missing(TYPO)) === 1, 5000, 100);
    expect(await missing(AGENT)).toBe(0);
    expect(sg.logs()).not.toMatch(new RegExp(`does not exist[^\\n]*"${AGENT}"`));
  });
});
