import { loadConfig } from '../config/index.js';
import { isNotFound, KubeClient, collectionPath } from '../kube/index.js';
import { createStore, stamperFromSecret, watchScopes } from '../sync/index.js';
import { objectKey, observe, parseObjectKey, Policy, resourceName } from '../guard/index.js';
import type { KubeObject } from '../kube/index.js';
import { createLogger } from '../log/index.js';
import { Metrics } from '../metrics/index.js';
import { ContinuityMonitor } from '../registration/index.js';
import type { ContinuityRecord, LayerState, NamespaceLabels } from '../guard/index.js';

const silentLogger = createLogger('error');
import { defineFlags, flag } from './flags.js';

export const statusHelp = `Usage: spec-guard status --config FILE [--kubeconfig F] [--namespace NS]

Prints every guarded object with its state — in sync, drifted (with the changed
pointers), changed but not stamped, unknown canonical, paused — then the leader, the store
and whether the admission layers have stayed in force (blind windows). Reads only.

Flags:
  --config FILE      configuration file (required)
  --kubeconfig F     kubeconfig (default: in-cluster, $KUBECONFIG or ~/.kube/config)
  --namespace NS     spec-guard's namespace (default: spec-guard)`;

interface Row {
  object: string;
  state: string;
  detail: string;
}

function table(rows: Row[]): string {
  const width = (f: keyof Row, title: string) => Math.max(title.length, ...rows.map((r) => r[f].length));
  const w = { object: width('object', 'OBJECT'), state: width('state', 'STATE') };
  const line = (o: string, s: string, d: string) => `${o.padEnd(w.object)}  ${s.padEnd(w.state)}  ${d}`.trimEnd();
  return [line('OBJECT', 'STATE', 'DETAIL'), ...rows.map((r) => line(r.object, r.state, r.detail))].join('\n');
}

/** The admission layers as stored continuity and the live objects show them (stamping needs a serving replica, not this command). */
async function describeLayers(kube: KubeClient, policy: Policy, namespace: string, record: ContinuityRecord | undefined): Promise<string> {
  const monitor = new ContinuityMonitor(
    { kube, policy, namespace, serving: () => undefined, save: async () => {}, isLeader: () => false, logger: silentLogger, metrics: new Metrics(false), onEstablished: () => {} },
    record,
  );
  const layers = await monitor.verify();
  const show = (state: LayerState) => (state.intact ? `in force since revision ${state.since}` : 'NOT in force without a gap (a blind window, or not verified by spec-guard yet)');
  return `guard ${show(layers.guard)}; tombstone ${show(layers.tombstone)}`;
}

async function listNamespaceLabels(kube: KubeClient): Promise<NamespaceLabels> {
  const list = await kube.request<{ items: KubeObject[] }>('GET', '/api/v1/namespaces');
  const labels = new Map(list.items.map((ns) => [ns.metadata?.name ?? '', ns.metadata?.labels ?? {}]));
  return (namespace) => labels.get(namespace);
}

const statusFlags = defineFlags({ config: flag.config, kubeconfig: flag.kubeconfig, namespace: flag.namespace });

export async function status(argv: string[]): Promise<number> {
  const flags = statusFlags(argv);
  if (flags === 'help') {
    console.log(statusHelp);
    return 0;
  }
  const config = loadConfig(flags.config);
  const { namespace } = flags;
  const kube = await KubeClient.load(flags.kubeconfig);
  try {
    const policy = new Policy(config);
    const stamper = await stamperFromSecret(kube, namespace);
    const store = createStore(config.store, kube, namespace, (msg) => console.error(`store: ${msg}`));
    const stored = await store.load();
    const rows: Row[] = [];
    const seen = new Set<string>();
    const namespaceLabels = policy.readsNamespaceLabels ? await listNamespaceLabels(kube) : undefined;
    for (const { group, version, resource, namespace: scope } of watchScopes(policy)) {
      const list = await kube.request<{ items: KubeObject[] }>('GET', collectionPath(group, version, resource, scope));
      for (const object of list.items) {
        const key = objectKey(group, resource, object.metadata?.namespace, object.metadata?.name ?? '');
        const entry = stored.entries.get(key);
        const matched = policy.matchStored(group, resource, object, entry, namespaceLabels);
        if (!matched) continue;
        seen.add(key);
        const name = `${resourceName(group, resource)} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name}`;
        if (matched.mode === 'off') {
          rows.push({ object: name, state: 'paused', detail: `mode off (resources[${matched.index}])` });
          continue;
        }
        if (!matched.selection.selects(object.metadata ?? {})) {
          rows.push({ object: name, state: 'moved out', detail: 'its labels or annotations left the selection: the leader moves it back (or forgets it, for a trusted move)' });
          continue;
        }
        const obs = observe(object, matched, key, entry, stored.tombstones.get(key), stamper);
        const row = { object: name, state: '', detail: '' };
        switch (obs.kind) {
          case 'learn':
            Object.assign(row, { state: 'in sync', detail: 'stamped' });
            break;
          case 'in-sync':
            Object.assign(row, { state: 'in sync', detail: obs.restoreStamp ? 'stamp missing or changed' : '' });
            break;
          case 'too-deep':
            Object.assign(row, { state: 'too deep to guard', detail: 'reverted unless a trusted writer wrote it (then no longer guarded)' });
            break;
          case 'changed':
            Object.assign(row, {
              state: obs.previous ? 'changed, not stamped' : 'unknown canonical',
              detail: obs.previous ? `${obs.changed.join(', ')}: the leader attributes it (admission layers below)` : 'nothing vouches for it yet',
            });
            break;
          case 'unknown':
            Object.assign(row, { state: 'unknown canonical', detail: '' });
            break;
          case 'ignore':
            Object.assign(row, { state: 'deleting', detail: '' });
            break;
        }
        rows.push(row);
      }
    }
    for (const key of stored.entries.keys()) {
      if (seen.has(key)) continue;
      const { group, resource, namespace: ns, name } = parseObjectKey(key);
      const tombstone = stored.tombstones.get(key);
      rows.push({
        object: `${resourceName(group, resource)} ${ns ? `${ns}/` : ''}${name}`,
        state: tombstone ? 'deleted' : 'missing',
        detail: tombstone ? `by the source of truth at ${tombstone.at}` : 'to be recreated from the canonical copy',
      });
    }
    console.log(table(rows));
    let leader = 'none';
    try {
      const lease = await kube.request<{ spec: { holderIdentity?: string; renewTime?: string } }>(
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/spec-guard`,
      );
      leader = lease.spec.holderIdentity ? `${lease.spec.holderIdentity} (renewed ${lease.spec.renewTime})` : 'none (lease released)';
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    console.log(`\nleader: ${leader}`);
    console.log(`store:  ${store.description}: ${stored.entries.size} canonical entries, ${stored.tombstones.size} tombstones`);
    console.log(`layers: ${await describeLayers(kube, policy, namespace, stored.continuity)}`);
    return 0;
  } finally {
    kube.close();
  }
}
