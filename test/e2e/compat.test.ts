import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { KubeClient } from '../../src/kube/index.js';
import { inCluster, state } from './harness.js';

// Compatibility: the suite runs on the oldest Kubernetes spec-guard supports (the default
// control plane); here the core scenarios run again, unchanged, on the newest, in a control
// plane of their own. Building that apiserver on a cold machine takes minutes.
jest.setTimeout(45 * 60_000);

const root = new URL('../../', import.meta.url).pathname;
const versions = readFileSync(`${root}scripts/versions.sh`, 'utf8');
const version = (name: string) => versions.match(new RegExp(`^${name}=(\\S+)$`, 'm'))![1]!;
const OLDEST = version('KUBE_VERSION_DEFAULT');
const NEWEST = version('KUBE_VERSION_NEWEST');
/** The scenarios that make spec-guard what it is: admission, the policy alone, the watcher, the autonomous layout. */
const CORE = ['admission', 'admission-policy', 'sync', 'autonomous'];
const PLANE = { CP_NAME: 'compat', CP_APISERVER_PORT: '56443', CP_ETCD_PORT: '52379', SPEC_GUARD_KUBE_VERSION: NEWEST };
const controlPlane = (command: string) =>
  execFileSync('bash', [`${root}scripts/control-plane.sh`, command], { env: { ...process.env, ...PLANE }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

async function serverVersion(kubeconfig: string): Promise<string> {
  const kube = await KubeClient.load(kubeconfig);
  try {
    return (await kube.request<{ gitVersion: string }>('GET', '/version')).gitVersion;
  } finally {
    kube.close();
  }
}

(inCluster ? describe.skip : describe)(`Kubernetes ${OLDEST} to ${NEWEST}`, () => {
  let kubeconfig = '';

  beforeAll(() => {
    kubeconfig = controlPlane('up');
  });

  afterAll(() => {
    if (kubeconfig) controlPlane('down');
  });

  it('each apiserver reports its real version', async () => {
    expect(await serverVersion(state().adminKubeconfig)).toBe(OLDEST);
    expect(await serverVersion(kubeconfig)).toBe(NEWEST);
  });

  it(`the core scenarios (${CORE.join(', ')}) pass on ${NEWEST}`, () => {
    const { SPEC_GUARD_E2E_OWNED: _owned, ...env } = process.env;
    const run = spawnSync(
      process.execPath,
      ['--experimental-vm-modules', `${root}node_modules/jest/bin/jest.js`, '--selectProjects', 'e2e', '--runInBand', '--testPathPatterns', `/(${CORE.join('|')})\\.test\\.ts$`],
      { cwd: root, encoding: 'utf8', env: { ...env, SPEC_GUARD_E2E_KUBECONFIG: kubeconfig, SPEC_GUARD_E2E_SELF_KUBECONFIG: kubeconfig.replace(/admin\.kubeconfig$/, 'spec-guard.kubeconfig') } },
    );
    const output = `${run.stdout}\n${run.stderr}`;
    const totals = output.match(/^(\d+) passed, (\d+) failed$/m);
    if (run.status !== 0 || !totals) throw new Error(`the core scenarios failed on ${NEWEST}:\n${output.slice(-6000)}`);
    expect(Number(totals[2])).toBe(0);
    expect(Number(totals[1])).toBeGreaterThan(20);
    for (const suite of CORE) expect(output).toContain(`PASS e2e test/e2e/${suite}.test.ts`);
  });
});
