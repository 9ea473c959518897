// bench/apiserver-overhead: latency of Application UPDATEs through a real kube-apiserver,
// side by side in one run, under nine admission set-ups:
//   none                 no admission object
//   policy               spec-guard's ValidatingAdmissionPolicy and binding only (layer 0)
//   policy + spec-guard  everything spec-guard registers, spec-guard serving
//   Go webhook           a minimal Go webhook (bench/go-webhook) registered as spec-guard's webhooks are
//   Go + stamp patch     the same, answering trusted writes with a patch of the stamp's size and shape:
//                        what the patch costs the apiserver, apart from what computes it
//   Go, HTTP/1.1 + patch the same over HTTP/1.1 only, as a Node.js https server speaks (Go's serves
//                        HTTP/2 to the apiserver): what the protocol costs, apart from the server
//   bare Node.js webhook the least a guard does (bench/bare-server.ts `least`: compare, stamp) in
//                        a bare Node.js https server, registered as the Go webhooks are: the floor
//                        a Node.js webhook stands on, apart from spec-guard
//   spec-guard webhook   spec-guard's admission alone (serve --standalone: no watcher, no policy),
//                        registered as the Go webhooks are: the webhook against equal work, apart
//                        from what its watcher takes of the two cores the apiserver runs on
//   Go + policy + watch  Go + stamp patch, with spec-guard's policy registered and a watch of the
//                        Applications kept by another Go process (bench/go-reverter following every
//                        change): what the apiserver and the two cores pay for a guard that keeps
//                        spec-guard's promises (a layer that holds while the webhook is away, a watch
//                        that reverts), the webhook and the watch written in Go
// Writes: untrusted spec changes (denied), the agent's trusted spec updates (admitted; stamped by
// spec-guard) back to back and then paced, and the agent's updates that change nothing (its
// annotations replace the object's: a no-op for the apiserver unless admission changes the
// object). Back to back, the two cores are saturated and a write's latency follows the CPU every
// process spends on it (spec-guard's watcher included); paced, it is the latency a write sees on
// a machine with room. CPU per trusted write is counted for the apiserver and for the process
// serving the webhooks. Rounds repeat the set-ups in turn so that a noisy machine hits them alike.
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
import { AGENT, ALICE, APPS, adminClient, answers, application, controlPlaneDown, controlPlanePids, controlPlaneUp, freePort, metricsOf, percentile, releaseLease, sleep, startSpecGuard, type RunningSpecGuard } from './cluster.js';
import { processCpuMicros } from './process-cpu.js';
import { buildGoReverter, buildGoWebhook, followApplications, GO_TRUSTED_USER } from './go-peer.js';
import { SHIPPED_OPTIONS, shippedFlags } from './shipped-options.js';

const WRITERS = 8;
const UPDATES_PER_WRITER = Number(process.env.BENCH_UPDATES ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** Paced trusted writes: each writer one every 200 ms, 40 a second in all, well within what the two cores sustain. */
const PACED_EVERY_MS = 200;
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

/**
 * Each writer patches its own Application; returns the latencies in ms, and how many writes were
 * refused. Back to back by default (the machine saturated: latency then follows the CPU every
 * process spends per write); with `everyMs`, each writer starts a write every `everyMs` (staggered
 * across writers, later only when the one before is still running).
 */
async function writes(kube: KubeClient, headers: Record<string, string>, tag: string, everyMs = 0) {
  const latencies: number[] = [];
  let refused = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let n = 0; n < UPDATES_PER_WRITER; n++) {
        const wait = everyMs ? start + (w / WRITERS + n) * everyMs - performance.now() : 0;
        if (wait > 0) await sleep(wait);
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
 * The apiserver's calls of the stamp webhook so far, and the seconds it timed them (the call's
 * round trip as the apiserver sees it), from its own metrics (whoever serves it). A write is
 * admitted once per attempt to store it: the apiserver first tries the object its watch cache
 * holds, and when that is behind (the writer's previous write not seen there yet) it reads etcd
 * and runs admission again. More calls than writes is the apiserver's doing. With them, every
 * request it served so far, by verb and resource: what each set-up asks of it beside the writes.
 */
function apiserverCounts(admin: string): { calls: number; seconds: number; requests: Map<string, number> } {
  const text = execFileSync('kubectl', ['--kubeconfig', admin, 'get', '--raw', '/metrics'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const total = { calls: 0, seconds: 0, requests: new Map<string, number>() };
  for (const [, series, labels, value] of text.matchAll(/^apiserver_admission_webhook_admission_duration_seconds_(count|sum)\{([^}]*)\} (\S+)$/gm)) {
    if (labels!.includes('name="stamp.spec-guard.io"')) total[series === 'count' ? 'calls' : 'seconds'] += Number(value);
  }
  // Every request the apiserver served, by verb and resource: beyond the bench's own writes, what the set-up asks of it.
  for (const [, labels, value] of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const label = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(labels!)?.[1] ?? '';
    if (!label('resource')) continue; // the bench's reads of /metrics
    const key = `${label('verb')} ${label('resource')}${label('subresource') ? `/${label('subresource')}` : ''}`;
    total.requests.set(key, (total.requests.get(key) ?? 0) + Number(value));
  }
  return total;
}

/** One set-up's figures, summed over the rounds. */
interface Figures {
  untrusted: number[];
  trusted: number[];
  /** The same trusted writes paced (PACED_EVERY_MS), the machine not saturated. */
  paced: number[];
  refused: number;
  unchanged: number[];
  newVersions: number;
  counted: number;
  /** The stamp webhook's calls during the trusted writes, and the seconds the apiserver timed them. */
  stampCalls: number;
  stampSeconds: number;
  /** The apiserver's requests during the trusted writes, by verb and resource (the writes themselves among them). */
  requests: Map<string, number>;
  /** CPU during the trusted writes: the apiserver's, and the process serving the webhooks (its watcher too, for spec-guard). */
  apiserverCpuMicros: number;
  serverCpuMicros: number;
}

/** Waits until an HTTPS server answers on `port`: a webhook registered before would fail open. */
async function answering(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await answers(port)) return;
    await sleep(100);
  }
  throw new Error(`nothing answers on port ${port}`);
}

/** spec-guard's own part so far: its /mutate reviews (count, seconds spent deciding them). */
async function ownPart(sg: RunningSpecGuard) {
  const metrics = await metricsOf(sg);
  const series = (name: string) => Number(new RegExp(`^spec_guard_admission_duration_seconds_${name}\\{webhook="mutate"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);
  return { reviews: series('count'), seconds: series('sum') };
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
  /** A webhook server started on a port of its own: the port, and the process (whose CPU is counted). */
  const startServer = async (command: string, args: (port: number) => string[], env: Record<string, string> = {}) => {
    const port = await freePort();
    const child = spawn(command, args(port), { stdio: 'ignore', env: { ...process.env, ...env } });
    webhookServers.push(child);
    return { port, pid: child.pid! };
  };
  /** A Go webhook (`stamp-patch`: answering trusted writes with the stamp's patch). */
  const startGo = (mode: string[] = [], env: Record<string, string> = {}) => startServer(goBinary, (port) => [join(dir, 'tls.crt'), join(dir, 'tls.key'), `127.0.0.1:${port}`, GO_TRUSTED_USER, ...mode], env);
  const go = await startGo();
  const goPatch = await startGo(['stamp-patch']);
  const goHttp1 = await startGo(['stamp-patch'], { GODEBUG: 'http2server=0' });
  // The bare Node.js webhook and spec-guard's admission alone, with the shipped Node.js options, on the bench's certificate.
  const bareScript = fileURLToPath(new URL('./bare-server.js', import.meta.url));
  const bare = await startServer(process.execPath, (port) => [...shippedFlags(), bareScript, 'least', join(dir, 'tls.crt'), join(dir, 'tls.key'), String(port)]);
  const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
  const standalone = await startServer(process.execPath, (port) => [
    ...shippedFlags(), cli, 'serve', '--standalone', '--config', configFile, '--port', String(port), '--metrics-port', '0', '--bind-address', '127.0.0.1',
    '--tls-cert-file', join(dir, 'tls.crt'), '--tls-key-file', join(dir, 'tls.key'), '--log-level', 'warn',
  ]);
  const policy = new Policy(parseConfig(CONFIG, 'bench.yaml'), 'system:serviceaccount:spec-guard:spec-guard');
  const rendered = renderAdmissionObjects(policy, { endpoint: { url: `https://127.0.0.1:${go.port}` }, caBundle: ca.cert, excludedNamespaces: ['kube-system', 'spec-guard'] });
  const layer0 = { ValidatingAdmissionPolicy: rendered.ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding: rendered.ValidatingAdmissionPolicyBinding };
  const webhooksAt = (port: number) => renderAdmissionObjects(new Policy(parseConfig(`${CONFIG}admissionPolicy: false\n`, 'bench.yaml')), { endpoint: { url: `https://127.0.0.1:${port}` }, caBundle: ca.cert, excludedNamespaces: ['kube-system', 'spec-guard'] });
  const webhooksOnly = webhooksAt(go.port);
  const stampPatching = webhooksAt(goPatch.port);
  const overHttp1 = webhooksAt(goHttp1.port);
  const bareWebhooks = webhooksAt(bare.port);
  const standaloneWebhooks = webhooksAt(standalone.port);
  const goReverter = buildGoReverter();
  await answering(bare.port);
  await answering(standalone.port);
  const apiserverPid = controlPlanePids(admin)['kube-apiserver'];

  await clear(kube);
  await kube.request('DELETE', APPS).catch(() => undefined);
  for (let w = 0; w < WRITERS; w++) await kube.request('POST', APPS, { body: application(`overhead-${w}`), headers: AGENT, query: { fieldManager: 'argocd-agent' } });

  /** The spec-guard of the set-up running, if it is that one. */
  let specGuard: RunningSpecGuard | undefined;
  /** spec-guard's /mutate reviews of its trusted writes, summed over the rounds (its CPU is the set-up's, in Figures). */
  const own = { reviews: 0, seconds: 0 };
  /** The Go watch of `Go + policy + watch`, while that set-up runs. */
  let goWatch: ChildProcess | undefined;
  /** Each set-up: how it is put in place (returning how it is taken away), and the processes serving its webhooks and watch, if any (their CPU is counted together). */
  const setups: Array<{ name: string; up: () => Promise<() => Promise<void>>; processes?: () => Array<number | undefined> }> = [
    { name: 'none', up: async () => async () => undefined },
    { name: 'policy', up: async () => (await register(kube, layer0), async () => clear(kube)) },
    {
      name: 'policy + spec-guard',
      processes: () => [specGuard?.child.pid],
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
    { name: 'Go webhook', processes: () => [go.pid], up: async () => (await register(kube, webhooksOnly), async () => clear(kube)) },
    { name: 'Go + stamp patch', processes: () => [goPatch.pid], up: async () => (await register(kube, stampPatching), async () => clear(kube)) },
    { name: 'Go, HTTP/1.1 + patch', processes: () => [goHttp1.pid], up: async () => (await register(kube, overHttp1), async () => clear(kube)) },
    { name: 'bare Node.js webhook', processes: () => [bare.pid], up: async () => (await register(kube, bareWebhooks), async () => clear(kube)) },
    { name: 'spec-guard webhook', processes: () => [standalone.pid], up: async () => (await register(kube, standaloneWebhooks), async () => clear(kube)) },
    {
      name: 'Go + policy + watch',
      processes: () => [goPatch.pid, goWatch?.pid],
      up: async () => {
        await register(kube, { ...layer0, ...stampPatching });
        const watch = await followApplications(goReverter, self);
        goWatch = watch;
        return async () => {
          goWatch = undefined;
          watch.kill();
          await clear(kube);
        };
      },
    },
  ];
  const results = new Map<string, Figures>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const setup of setups) {
        const down = await setup.up();
        await sleep(2000); // a new policy or configuration is in force within about a second
        await writes(kube, AGENT, 'warm');
        const untrusted = await writes(kube, ALICE, `r${round}`);
        const before = specGuard && (await ownPart(specGuard));
        const callsBefore = apiserverCounts(admin);
        const servers = setup.processes?.() ?? [];
        const serversCpu = () => servers.reduce<number>((sum, pid) => sum + (pid ? processCpuMicros(pid) : 0), 0);
        const cpuBefore = { apiserver: processCpuMicros(apiserverPid), server: serversCpu() };
        const trusted = await writes(kube, AGENT, `r${round}`);
        const cpuAfter = { apiserver: processCpuMicros(apiserverPid), server: serversCpu() };
        const callsAfter = apiserverCounts(admin);
        if (specGuard && before) {
          const after = await ownPart(specGuard);
          own.reviews += after.reviews - before.reviews;
          own.seconds += after.seconds - before.seconds;
        }
        const paced = await writes(kube, AGENT, `p${round}`, PACED_EVERY_MS);
        const unchanged = await unchangedWrites(kube);
        await down();
        const r = results.get(setup.name) ?? { untrusted: [], trusted: [], paced: [], refused: 0, unchanged: [], newVersions: 0, counted: 0, stampCalls: 0, stampSeconds: 0, requests: new Map<string, number>(), apiserverCpuMicros: 0, serverCpuMicros: 0 };
        r.apiserverCpuMicros += cpuAfter.apiserver - cpuBefore.apiserver;
        r.serverCpuMicros += cpuAfter.server - cpuBefore.server;
        r.stampCalls += callsAfter.calls - callsBefore.calls;
        r.stampSeconds += callsAfter.seconds - callsBefore.seconds;
        for (const [key, count] of callsAfter.requests) {
          const more = count - (callsBefore.requests.get(key) ?? 0);
          if (more > 0) r.requests.set(key, (r.requests.get(key) ?? 0) + more);
        }
        r.untrusted.push(...untrusted.latencies);
        r.trusted.push(...trusted.latencies);
        r.paced.push(...paced.latencies);
        r.unchanged.push(...unchanged.latencies);
        r.newVersions += unchanged.newVersions;
        r.counted += unchanged.counted;
        r.refused += untrusted.refused;
        results.set(setup.name, r);
      }
    }
    report(setups.map((setup) => ({ name: setup.name, served: Boolean(setup.processes) })), results, own);
  } finally {
    for (const peer of webhookServers) peer.kill();
    kube.close();
    if (!process.env.BENCH_KEEP) controlPlaneDown();
  }
}

const stats = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};
const ms = (x: number) => x.toFixed(1).padStart(6);

/** Prints the figures side by side: one line per set-up, then what they say. */
function report(setups: Array<{ name: string; served: boolean }>, results: Map<string, Figures>, own: { reviews: number; seconds: number }): void {
  const of = (name: string) => results.get(name)!;
  const base = stats(of('none').trusted);
  const pacedBase = stats(of('none').paced);
  const added = (name: string) => stats(of(name).trusted).p50 - base.p50;
  const pacedAdded = (name: string) => {
    const t = stats(of(name).paced);
    return { p50: t.p50 - pacedBase.p50, p99: t.p99 - pacedBase.p99 };
  };
  const apiserverCpu = (name: string) => of(name).apiserverCpuMicros / 1000 / of(name).trusted.length;
  const serverCpu = (name: string) => of(name).serverCpuMicros / 1000 / of(name).trusted.length;
  console.log(`bench/apiserver-overhead: ${WRITERS} concurrent writers × ${UPDATES_PER_WRITER} PATCHes per case, ${ROUNDS} rounds, real kube-apiserver + etcd on this machine`);
  console.log(`back to back (the two cores saturated: latency follows the CPU every process spends per write):`);
  console.log(`${'set-up'.padEnd(20)} | untrusted p50 / p99 ms (refused) | trusted p50 / p99 ms | trusted added p50 / p99 ms | stamp webhook calls per trusted write, ms each as the apiserver times them | CPU ms per trusted write: apiserver, webhook's process`);
  for (const { name, served } of setups) {
    const r = of(name);
    const u = stats(r.untrusted);
    const t = stats(r.trusted);
    console.log(
      `${name.padEnd(20)} | ${ms(u.p50)} / ${ms(u.p99)} (${String(r.refused).padStart(4)} of ${r.untrusted.length}) | ${ms(t.p50)} / ${ms(t.p99)} | ${ms(t.p50 - base.p50)} / ${ms(t.p99 - base.p99)} | ` +
        `${(r.stampCalls / r.trusted.length).toFixed(2)}, ${r.stampCalls ? ((r.stampSeconds * 1000) / r.stampCalls).toFixed(2) : '-'} ms | ${apiserverCpu(name).toFixed(2)}, ${served ? serverCpu(name).toFixed(2) : '-'}`,
    );
  }
  const untrusted = (name: string) => stats(of(name).untrusted);
  console.log(
    `  → untrusted denials with spec-guard: p50 ${(untrusted('policy + spec-guard').p50 / untrusted('policy').p50).toFixed(2)}× the policy alone (target ≤ 1.0×); ` +
      `trusted writes' added p50: spec-guard ${added('policy + spec-guard').toFixed(1)} ms vs Go webhook ${added('Go webhook').toFixed(1)} ms (target ≤ 1.0×)`,
  );
  console.log(
    `  → spec-guard's own part of its trusted writes: ${own.reviews} /mutate reviews for ${of('policy + spec-guard').trusted.length} writes, ${((own.seconds * 1000) / Math.max(1, own.reviews)).toFixed(2)} ms each in the process on average (read to answer); ` +
      `its process CPU ${serverCpu('policy + spec-guard').toFixed(2)} ms per write (the review, and its watcher taking the write's event); the policy alone adds ${added('policy').toFixed(1)} ms p50`,
  );
  console.log(
    `  → the apiserver's CPU per trusted write: ${apiserverCpu('none').toFixed(2)} ms with no admission, ${apiserverCpu('Go webhook').toFixed(2)} with the Go webhook, ` +
      `${apiserverCpu('Go + stamp patch').toFixed(2)} with its stamp patch (the patch: ${(apiserverCpu('Go + stamp patch') - apiserverCpu('Go webhook')).toFixed(2)} ms), ` +
      `${apiserverCpu('spec-guard webhook').toFixed(2)} with spec-guard's webhook, ${apiserverCpu('policy + spec-guard').toFixed(2)} with the whole of spec-guard (its policy, and its watch), ` +
      `${apiserverCpu('Go + policy + watch').toFixed(2)} with the Go webhook's patch, the policy and a Go watch`,
  );
  console.log(`the apiserver's other requests per trusted write (beyond the writes, PATCH applications), while they ran:`);
  for (const { name } of setups) {
    const r = of(name);
    const others = [...r.requests].filter(([key]) => key !== 'PATCH applications').sort((a, b) => b[1] - a[1]);
    const total = others.reduce((sum, [, count]) => sum + count, 0);
    const top = others.slice(0, 4).map(([key, count]) => `${key} ${(count / r.trusted.length).toFixed(3)}`).join(', ');
    console.log(`  ${name.padEnd(20)} | ${(total / r.trusted.length).toFixed(3)}${top ? ` (${top})` : ''}`);
  }
  console.log(`paced (each writer one trusted write every ${PACED_EVERY_MS} ms, ${((WRITERS * 1000) / PACED_EVERY_MS).toFixed(0)} a second: the latency a write sees on a machine that is not saturated):`);
  for (const { name } of setups) {
    const t = stats(of(name).paced);
    const a = pacedAdded(name);
    console.log(`  ${name.padEnd(20)} | trusted p50 / p99 ${ms(t.p50)} / ${ms(t.p99)} ms | added ${ms(a.p50)} / ${ms(a.p99)} ms`);
  }
  const vs = (name: string, peer: string) => `${pacedAdded(name).p50.toFixed(1)} / ${pacedAdded(name).p99.toFixed(1)} ms vs ${pacedAdded(peer).p50.toFixed(1)} / ${pacedAdded(peer).p99.toFixed(1)} ms`;
  console.log(
    `  → trusted added p50 / p99, paced: spec-guard ${vs('policy + spec-guard', 'Go webhook')} for the Go webhook (target ≤ 1.0×); ` +
      `the stamp patch (Go) ${vs('Go + stamp patch', 'Go webhook')} without; spec-guard's webhook alone ${vs('spec-guard webhook', 'Go, HTTP/1.1 + patch')} for the Go webhook's equal work over HTTP/1.1; ` +
      `the bare Node.js webhook ${pacedAdded('bare Node.js webhook').p50.toFixed(1)} / ${pacedAdded('bare Node.js webhook').p99.toFixed(1)} ms`,
  );
  console.log(
    `  → against a guard keeping the same promises in Go (its webhook's stamp patch, the policy, a watch): spec-guard ${vs('policy + spec-guard', 'Go + policy + watch')}; ` +
      `back to back ${added('policy + spec-guard').toFixed(1)} ms vs ${added('Go + policy + watch').toFixed(1)} ms p50 added`,
  );
  console.log(`the agent's updates that change nothing (its annotations replace the object's, the stamp dropped), as argocd-agent sends them:`);
  for (const { name } of setups) {
    const r = of(name);
    const u = stats(r.unchanged);
    console.log(`  ${name.padEnd(20)} | p50 / p99 ${ms(u.p50)} / ${ms(u.p99)} ms | new versions written: ${r.newVersions} of ${r.counted}`);
  }
}

await main();
