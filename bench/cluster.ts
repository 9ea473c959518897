// Shared by the benchmarks that need a real kube-apiserver: brings up the local control
// plane (its own name and ports, so it never collides with the tests), starts
// spec-guard as a child process, and writes as the test identities by impersonation.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KeyPair } from '../src/certs/index.js';
import { KubeClient } from '../src/kube/index.js';

export const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));

export const AGENT = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-agent-agent' };
export const ALICE = { 'Impersonate-User': 'alice', 'Impersonate-Group': 'developers' };
export const APPS = '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications';

const APISERVER_PORT = '46443';
/** The bench control plane's apiserver. */
export const APISERVER = `https://127.0.0.1:${APISERVER_PORT}`;
const controlPlaneEnv = { ...process.env, CP_NAME: 'bench', CP_APISERVER_PORT: APISERVER_PORT, CP_ETCD_PORT: '42379' };

export function controlPlaneUp(): { admin: string; self: string } {
  const admin = execFileSync('bash', [`${root}scripts/control-plane.sh`, 'up'], { env: controlPlaneEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return { admin, self: admin.replace(/admin\.kubeconfig$/, 'spec-guard.kubeconfig') };
}

/**
 * The certificate the control plane's apiserver presents to webhooks (its front-proxy client
 * certificate) and the CA that signed it: a bench that posts reviews to spec-guard itself
 * presents it, as spec-guard answers no one else (`--client-ca-from-cluster`).
 */
export function apiserverClientCert(admin: string): KeyPair & { caFile: string } {
  const pki = join(dirname(admin), 'pki');
  return { cert: readFileSync(join(pki, 'front-proxy-client.crt'), 'utf8'), key: readFileSync(join(pki, 'front-proxy-client.key'), 'utf8'), caFile: join(pki, 'ca.crt') };
}

/** The local control plane's processes (their pid files sit beside the admin kubeconfig). */
export function controlPlanePids(admin: string): Record<'kube-apiserver' | 'etcd', number> {
  const pid = (name: string) => Number(readFileSync(join(dirname(admin), `${name}.pid`), 'utf8').trim());
  return { 'kube-apiserver': pid('apiserver'), etcd: pid('etcd') };
}

/**
 * A new kube-apiserver on the same etcd: its heap grows over repeated lists of 100,000 objects
 * (9–10 GB, each list slower than the one before), so a start timed after many is timed against
 * a slower apiserver than a start in production meets.
 */
export function restartApiserver(): void {
  execFileSync('bash', [`${root}scripts/control-plane.sh`, 'restart-apiserver'], { env: controlPlaneEnv, stdio: ['ignore', 'ignore', 'inherit'] });
}

export function controlPlaneDown(): void {
  execFileSync('bash', [`${root}scripts/control-plane.sh`, 'down'], { env: controlPlaneEnv, stdio: 'inherit' });
}

/** Does an HTTPS server answer on local `port`? Any HTTP answer (a 404 too) means it is up. */
export const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/', rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.end();
  });

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface RunningSpecGuard {
  child: ChildProcess;
  port: number;
  metricsPort: number;
  /** ms from spawn to the "ready" log line. */
  startMs: number;
  /** Where its log lines go. */
  logFile: string;
  stop(): Promise<void>;
}

/** A spec-guard process, from its spawn: `ready` resolves with it running, once it logs that it is ready. */
export interface SpawnedSpecGuard {
  child: ChildProcess;
  logFile: string;
  ready: Promise<RunningSpecGuard>;
}

/**
 * `nodeOptions`: given as NODE_OPTIONS, as the manifests give them; `nodeFlags`: on node's command
 * line, as an image's entrypoint would (NODE_OPTIONS refuses most V8 flags).
 */
export async function spawnSpecGuard(selfKubeconfig: string, config: string, extra: string[] = [], nodeOptions = '', nodeFlags: string[] = []): Promise<SpawnedSpecGuard> {
  const port = await freePort();
  const metricsPort = await freePort();
  // Logs go to a file, as a container runtime takes them: through a pipe to this busy
  // process, spec-guard's synchronous log writes would wait for the bench to read them.
  const logFile = join(mkdtempSync(join(tmpdir(), 'spec-guard-bench-log-')), 'stderr.log');
  const log = openSync(logFile, 'w');
  const started = Date.now();
  const child = spawn(
    process.execPath,
    // As shipped: reviews only from the apiserver's front-proxy certificate, checked against the CA it publishes.
    [...nodeFlags, cli, 'serve', '--config', config, '--kubeconfig', selfKubeconfig, '--namespace', 'spec-guard', '--client-ca-from-cluster', '--bind-address', '127.0.0.1', '--port', String(port), '--metrics-port', String(metricsPort), '--webhook-url', `https://127.0.0.1:${port}`, ...extra],
    { stdio: ['ignore', 'ignore', log], env: { ...process.env, NODE_OPTIONS: nodeOptions } },
  );
  closeSync(log);
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  const ready = (async (): Promise<RunningSpecGuard> => {
    for (;;) {
      const logs = readFileSync(logFile, 'utf8');
      if (logs.includes('"spec-guard ready"')) break;
      if (exited !== undefined) throw new Error(`spec-guard exited (${exited}):\n${logs}`);
      await sleep(20);
    }
    const startMs = Date.now() - started;
    return {
      child,
      port,
      metricsPort,
      startMs,
      logFile,
      stop: () =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.removeAllListeners('exit');
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    };
  })();
  return { child, logFile, ready };
}

export async function startSpecGuard(selfKubeconfig: string, config: string, extra: string[] = [], nodeOptions = '', nodeFlags: string[] = []): Promise<RunningSpecGuard> {
  return (await spawnSpecGuard(selfKubeconfig, config, extra, nodeOptions, nodeFlags)).ready;
}

/** Ends spec-guard's leadership record, so the next spec-guard leads at once. */
export async function releaseLease(kube: KubeClient): Promise<void> {
  await kube.request('DELETE', '/apis/coordination.k8s.io/v1/namespaces/spec-guard/leases/spec-guard').catch(() => undefined);
}

/** Removes spec-guard's admission objects: a blind window until it registers them again. */
export async function unregister(kube: KubeClient): Promise<void> {
  for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations', 'validatingadmissionpolicies', 'validatingadmissionpolicybindings']) {
    await kube.request('DELETE', `/apis/admissionregistration.k8s.io/v1/${kind}/spec-guard`).catch(() => undefined);
  }
}

/** Runs `task(0)` … `task(count - 1)`, `workers` at a time. */
export async function inParallel(count: number, workers: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = next++; i < count; i = next++) await task(i);
    }),
  );
}

export async function adminClient(kubeconfig: string): Promise<KubeClient> {
  return KubeClient.load(kubeconfig);
}

export function application(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: 'argocd' },
    spec: {
      project: 'default',
      source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'guestbook' },
      ...spec,
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * spec-guard's metrics page. Retried: a kept-alive connection that the server closes as idle
 * just as the next request goes out is reset (likelier while a store write keeps its event
 * loop busy at 100,000 objects).
 */
export async function metricsOf(sg: { metricsPort: number }): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await (await fetch(`http://127.0.0.1:${sg.metricsPort}/metrics`)).text();
    } catch (err) {
      if (attempt >= 5) throw err;
      await sleep(100);
    }
  }
}
