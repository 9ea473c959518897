// bench/apiserver-overhead: latency of Application UPDATEs through a real kube-apiserver,
// side by side in one run, under seven admission set-ups:
//   none                 no admission object
//   policy               spec-guard's ValidatingAdmissionPolicy and binding only (layer 0)
//   policy + spec-guard  everything spec-guard registers, spec-guard serving
//   Go webhook           a minimal Go webhook (bench/go-webhook) registered as spec-guard's webhooks are
//   Go + stamp patch     the same, answering trusted writes with a patch of the stamp's size and shape:
//                        what the patch costs the apiserver, apart from what computes it
//   Go, HTTP/1.1 + patch the same over HTTP/1.1 only, as a Node.js https server speaks (Go's serves
//                        HTTP/2 to the apiserver): what the protocol costs, apart from the server
//   spec-guard webhook   spec-guard's admission alone (serve --standalone: no watcher, no policy),
//                        registered as the Go webhooks are: the webhook against equal work, apart
//                        from what its watcher takes of the two cores the apiserver runs on
// Writes: untrusted spec changes (denied), the agent's trusted spec updates (admitted; stamped by
// spec-guard), and the agent's updates that change nothing (its annotations replace the object's:
// a no-op for the apiserver unless admission changes the object). Rounds repeat the set-ups in
// turn so that a noisy machine hits them alike.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCA, createServingCert } from '../src/certs/index.js';
import { parseConfig } from '../src/config/index.js';
import type { KubeClient } from '../src/kube/index.js';
import { renderAdmissionObjects } from '../src/registration/index.js';
import { Policy } from '../src/guard/index.js';
import { AGENT, ALICE, APPS, adminClient, answers, application, controlPlaneDown, controlPlaneUp, freePort, metricsOf, percentile, releaseLease, sleep, startSpecGuard, type RunningSpecGuard } from './cluster.js';
import { processCpuMicros } from './process-cpu.js';
import { buildGoWebhook, GO_TRUSTED_USER } from './go-peer.js';
import { SHIPPED_OPTIONS, shippedFlags } from './shipped-options.js';

const WRITERS = 8;
const UPDATES_PER_WRITER = Number(process.env.BENCH_UPDATES ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const KINDS = {
  MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
  ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
  ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings',
} as const;
const CONFIG = `trust:\n  users: [${GO_TRUSTED_USER}]\nresources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    normalizer: argocd-application\nstore:\n  type: memory\n`;

async function clear(kube: KubeClient): Promise<void> {
  for (const plural of Object.values(KINDS)) await kube.request('DELETE', `${ADMISSION}/${plural}/spec-guard`).catch(() => undefined);
}

async function register(kube: KubeClient, objects: Partial<Record<keyof typeof KINDS, Record<string, unknown>>>): Promise<void> {
  for (const [kind, body] of Object.entries(objects)) await kube.request('POST', `${ADMISSION}/${KINDS[kind as keyof typeof KINDS]}`, { body });
}

/** Each writer patches its own Application; returns the latencies in ms, and how many writes were refused. */
async function writes(kube: KubeClient, headers: Record<string, string>, tag: string) {
  const latencies: number[] = [];
  let refused = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let n = 0; n < UPDATES_PER_WRITER; n++) {
        const body = { spec: { source: { targetRevision: `${tag}-${w}-${n}-${Math.random()}` } } };
        const started = performance.now();
        try {
          await kube.request('PATCH', `${APPS}/overhead-${w}`, { body, contentType: 'application/merge-patch+json', headers, query: { fieldManager: headers === AGENT ? 'argocd-agent' : 'kubectl-patch' } });
        } catch {
          refused++;
        }
        latencies.push(performance.now() - started);
      }
    }),
  );
  return { latencies, refused };
}

/**
 * The agent's updates that change nothing, as argocd-agent writes them (its annotations replace
 * the object's, dropping the stamp): the latencies, and how many of them (each writer's first
 * aside, which may change the annotations) made a new version of the object.
 */
async function unchangedWrites(kube: KubeClient) {
  const latencies: number[] = [];
  let newVersions = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      let last: string | undefined;
      for (let n = 0; n < UPDATES_PER_WRITER; n++) {
        const body = [{ op: 'add', path: '/metadata/annotations', value: { 'argocd.argoproj.io/refresh': 'normal' } }];
        const started = performance.now();
        const answer = await kube.request<{ metadata?: { resourceVersion?: string } }>('PATCH', `${APPS}/overhead-${w}`, { body, contentType: 'application/json-patch+json', headers: AGENT, query: { fieldManager: 'argocd-agent' } });
        latencies.push(performance.now() - started);
        const version = answer.metadata?.resourceVersion;
        if (n > 0 && version !== last) newVersions++;
        last = version;
      }
    }),
  );
  return { latencies, newVersions, counted: WRITERS * (UPDATES_PER_WRITER - 1) };
}

/**
 * The apiserver's calls of the stamp webhook so far, from its own metrics (whoever serves it).
 * A write is admitted once per attempt to store it: the apiserver first tries the object its
 * watch cache holds, and when that is behind (the writer's previous write not seen there yet)
 * it reads etcd and runs admission again. More calls than writes is the apiserver's doing.
 */
function stampWebhookCalls(admin: string): number {
  const text = execFileSync('kubectl', ['--kubeconfig', admin, 'get', '--raw', '/metrics'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  let calls = 0;
  for (const [, labels, value] of text.matchAll(/^apiserver_admission_webhook_admission_duration_seconds_count\{([^}]*)\} (\S+)$/gm)) {
    if (labels!.includes('name="stamp.spec-guard.io"')) calls += Number(value);
  }
  return calls;
}

/** Waits until an HTTPS server answers on `port`: a webhook registered before would fail open. */
async function answering(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await answers(port)) return;
    await sleep(100);
  }
  throw new Error(`nothing answers on port ${port}`);
}

/** spec-guard's own part so far: its /mutate reviews (count, seconds spent deciding them) and its process CPU. */
async function ownPart(sg: RunningSpecGuard) {
  const metrics = await metricsOf(sg);
  const series = (name: string) => Number(new RegExp(`^spec_guard_admission_duration_seconds_${name}\\{webhook="mutate"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);
  return { reviews: series('count'), seconds: series('sum'), cpuMicros: processCpuMicros(sg.child.pid!) };
}

async function main(): Promise<void> {
  const { admin, self } = controlPlaneUp();
  const kube = await adminClient(admin);
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-overhead-'));
  const configFile = join(dir, 'config.yaml');
  writeFileSync(configFile, CONFIG);
  const ca = createCA();
  const tls = createServingCert(ca, ['127.0.0.1']);
  writeFileSync(join(dir, 'tls.crt'), tls.cert);
  writeFileSync(join(dir, 'tls.key'), tls.key);
  const goBinary = buildGoWebhook();
  const webhookServers: ChildProcess[] = [];
  /** A Go webhook on a port of its own (`stamp-patch`: answering trusted writes with the stamp's patch). */
  const startGo = async (mode: string[] = [], env: Record<string, string> = {}) => {
    const port = await freePort();
    webhookServers.push(spawn(goBinary, [join(dir, 'tls.crt'), join(dir, 'tls.key'), `127.0.0.1:${port}`, GO_TRUSTED_USER, ...mode], { stdio: 'ignore', env: { ...process.env, ...env } }));
    return port;
  };
  const goPort = await startGo();
  const goPatchPort = await startGo(['stamp-patch']);
  const goHttp1Port = await startGo(['stamp-patch'], { GODEBUG: 'http2server=0' });
  // spec-guard's admission alone, with the shipped Node.js options, on the bench's certificate.
  const standalonePort = await freePort();
  const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
  webhookServers.push(
    spawn(process.execPath, [...shippedFlags(), cli, 'serve', '--standalone', '--config', configFile, '--port', String(standalonePort), '--metrics-port', '0', '--bind-address', '127.0.0.1', '--tls-cert-file', join(dir, 'tls.crt'), '--tls-key-file', join(dir, 'tls.key'), '--log-level', 'warn'], { stdio: 'ignore' }),
  );
  const policy = new Policy(parseConfig(CONFIG, 'bench.yaml'), 'system:serviceaccount:spec-guard:spec-guard');
  const rendered = renderAdmissionObjects(policy, { endpoint: { url: `https://127.0.0.1:${goPort}` }, caBundle: ca.cert, excludedNamespaces: ['kube-system', 'spec-guard'] });
  const layer0 = { ValidatingAdmissionPolicy: rendered.ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding: rendered.ValidatingAdmissionPolicyBinding };
  const webhooksAt = (port: number) => renderAdmissionObjects(new Policy(parseConfig(`${CONFIG}admissionPolicy: false\n`, 'bench.yaml')), { endpoint: { url: `https://127.0.0.1:${port}` }, caBundle: ca.cert, excludedNamespaces: ['kube-system', 'spec-guard'] });
  const webhooksOnly = webhooksAt(goPort);
  const stampPatching = webhooksAt(goPatchPort);
  const overHttp1 = webhooksAt(goHttp1Port);
  const standaloneWebhooks = webhooksAt(standalonePort);
  await answering(standalonePort);

  await clear(kube);
  await kube.request('DELETE', APPS).catch(() => undefined);
  for (let w = 0; w < WRITERS; w++) await kube.request('POST', APPS, { body: application(`overhead-${w}`), headers: AGENT, query: { fieldManager: 'argocd-agent' } });

  /** The spec-guard of the set-up running, if it is that one. */
  let specGuard: RunningSpecGuard | undefined;
  /** spec-guard's part of its trusted writes, summed over the rounds. */
  const own = { writes: 0, reviews: 0, seconds: 0, cpuMicros: 0 };
  const setups: Array<{ name: string; up: () => Promise<() => Promise<void>> }> = [
    { name: 'none', up: async () => async () => undefined },
    { name: 'policy', up: async () => (await register(kube, layer0), async () => clear(kube)) },
    {
      name: 'policy + spec-guard',
      up: async () => {
        await releaseLease(kube);
        const sg = await startSpecGuard(self, configFile, [], SHIPPED_OPTIONS);
        specGuard = sg;
        return async () => {
          specGuard = undefined;
          await sg.stop();
          await clear(kube);
        };
      },
    },
    { name: 'Go webhook', up: async () => (await register(kube, webhooksOnly), async () => clear(kube)) },
    { name: 'Go + stamp patch', up: async () => (await register(kube, stampPatching), async () => clear(kube)) },
    { name: 'Go, HTTP/1.1 + patch', up: async () => (await register(kube, overHttp1), async () => clear(kube)) },
    { name: 'spec-guard webhook', up: async () => (await register(kube, standaloneWebhooks), async () => clear(kube)) },
  ];
  const results = new Map<string, { untrusted: number[]; trusted: number[]; refused: number; admittedUntrusted: number; unchanged: number[]; newVersions: number; counted: number; stampCalls: number }>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const setup of setups) {
        const down = await setup.up();
        await sleep(2000); // a new policy or configuration is in force within about a second
        await writes(kube, AGENT, 'warm');
        const untrusted = await writes(kube, ALICE, `r${round}`);
        const before = specGuard && (await ownPart(specGuard));
        const callsBefore = stampWebhookCalls(admin);
        const trusted = await writes(kube, AGENT, `r${round}`);
        const stampCalls = stampWebhookCalls(admin) - callsBefore;
        if (specGuard && before) {
          const after = await ownPart(specGuard);
          own.writes += trusted.latencies.length;
          own.reviews += after.reviews - before.reviews;
          own.seconds += after.seconds - before.seconds;
          own.cpuMicros += after.cpuMicros - before.cpuMicros;
        }
        const unchanged = await unchangedWrites(kube);
        await down();
        const r = results.get(setup.name) ?? { untrusted: [], trusted: [], refused: 0, admittedUntrusted: 0, unchanged: [], newVersions: 0, counted: 0, stampCalls: 0 };
        r.stampCalls += stampCalls;
        r.untrusted.push(...untrusted.latencies);
        r.trusted.push(...trusted.latencies);
        r.unchanged.push(...unchanged.latencies);
        r.newVersions += unchanged.newVersions;
        r.counted += unchanged.counted;
        r.refused += untrusted.refused;
        r.admittedUntrusted += untrusted.latencies.length - untrusted.refused;
        results.set(setup.name, r);
      }
    }
    console.log(`bench/apiserver-overhead: ${WRITERS} concurrent writers × ${UPDATES_PER_WRITER} PATCHes per case, ${ROUNDS} rounds, real kube-apiserver + etcd on this machine`);
    console.log(`${'set-up'.padEnd(20)} | untrusted p50 / p99 ms (refused) | trusted p50 / p99 ms | trusted added p50 / p99 ms | stamp webhook calls per trusted write`);
    const none = results.get('none')!;
    const stats = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
    };
    const base = stats(none.trusted);
    for (const setup of setups) {
      const r = results.get(setup.name)!;
      const u = stats(r.untrusted);
      const t = stats(r.trusted);
      console.log(
        `${setup.name.padEnd(20)} | ${u.p50.toFixed(1).padStart(6)} / ${u.p99.toFixed(1).padStart(6)} (${String(r.refused).padStart(4)} of ${r.untrusted.length}) | ${t.p50.toFixed(1).padStart(6)} / ${t.p99.toFixed(1).padStart(6)} | ${(t.p50 - base.p50).toFixed(1).padStart(6)} / ${(t.p99 - base.p99).toFixed(1).padStart(6)} | ${(r.stampCalls / r.trusted.length).toFixed(2)}`,
      );
    }
    const untrusted = (name: string) => stats(results.get(name)!.untrusted);
    const added = (name: string) => stats(results.get(name)!.trusted).p50 - base.p50;
    console.log(
      `  → untrusted denials with spec-guard: p50 ${(untrusted('policy + spec-guard').p50 / untrusted('policy').p50).toFixed(2)}× the policy alone (target ≤ 1.0×); ` +
        `trusted writes' added p50: spec-guard ${added('policy + spec-guard').toFixed(1)} ms vs Go webhook ${added('Go webhook').toFixed(1)} ms (target ≤ 1.0×)`,
    );
    console.log(
      `  → the stamp patch alone (the Go webhook answering with one of its size): trusted added p50 ${added('Go + stamp patch').toFixed(1)} ms vs ${added('Go webhook').toFixed(1)} ms without: ` +
        `${(added('Go + stamp patch') - added('Go webhook')).toFixed(1)} ms of the apiserver's per trusted write are the patch's, whoever computes it`,
    );
    console.log(
      `  → spec-guard's own part of its trusted writes: ${own.reviews} /mutate reviews for ${own.writes} writes, ${((own.seconds * 1000) / Math.max(1, own.reviews)).toFixed(2)} ms each in the process on average (read to answer); ` +
        `its process CPU ${(own.cpuMicros / 1000 / Math.max(1, own.writes)).toFixed(2)} ms per write (the review, and its watcher taking the write's event); the policy alone adds ${added('policy').toFixed(1)} ms p50`,
    );
    console.log(`the agent's updates that change nothing (its annotations replace the object's, the stamp dropped), as argocd-agent sends them:`);
    for (const setup of setups) {
      const r = results.get(setup.name)!;
      const u = stats(r.unchanged);
      console.log(`  ${setup.name.padEnd(20)} | p50 / p99 ${u.p50.toFixed(1).padStart(6)} / ${u.p99.toFixed(1).padStart(6)} ms | new versions written: ${r.newVersions} of ${r.counted}`);
    }
    console.log(
      `  → HTTP/1.1 (what a Node.js https server speaks) instead of HTTP/2, the same Go webhook and patch: trusted added p50 ${added('Go, HTTP/1.1 + patch').toFixed(1)} ms vs ${added('Go + stamp patch').toFixed(1)} ms; spec-guard ${added('policy + spec-guard').toFixed(1)} ms`,
    );
    console.log(
      `  → spec-guard's webhook alone (no watcher, no policy), registered as the Go webhooks: trusted added p50 ${added('spec-guard webhook').toFixed(1)} ms vs ${added('Go, HTTP/1.1 + patch').toFixed(1)} ms for the Go webhook's equal work over the same protocol; ` +
        `the whole of spec-guard ${added('policy + spec-guard').toFixed(1)} ms (its watcher takes each write's event on the cores the apiserver runs on)`,
    );
  } finally {
    for (const peer of webhookServers) peer.kill();
    kube.close();
    if (!process.env.BENCH_KEEP) controlPlaneDown();
  }
}

await main();
