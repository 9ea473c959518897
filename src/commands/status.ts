import { loadConfig } from '../config/index.js';
import { SPEC_GUARD } from '../names.js';
import { KubeClient, Resources } from '../kube/index.js';
import { createStore, stamperFromSecret, watchScopes, type Snapshot } from '../sync/index.js';
import { objectKey, observe, parseObjectKey, Policy, resourceName, type Observation, type Stamper } from '../guard/index.js';
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
    { kube, policy, namespace, serving: () => undefined, save: async () => {}, logger: silentLogger, metrics: new Metrics(false), onEstablished: () => {} },
    record,
  );
  const layers = await monitor.verify();
  const show = (state: LayerState) => {
    const ended = state.verified?.find((p) => !state.intact || p.since !== state.since);
    const before = ended ? ` (earlier verified in force from revision ${ended.since} to ${ended.until}: changes made within it stay attributed)` : '';
    return (state.intact ? `in force since revision ${state.since}` : 'NOT in force without a gap (a blind window, or not verified by spec-guard yet)') + before;
  };
  return `guard ${show(layers.guard)}; tombstone ${show(layers.tombstone)}`;
}

async function listNamespaceLabels(kube: KubeClient): Promise<NamespaceLabels> {
  const list = await Resources.of<KubeObject>(kube, '', 'v1', 'namespaces').list();
  const labels = new Map(list.map((ns) => [ns.metadata?.name ?? '', ns.metadata?.labels ?? {}]));
  return (namespace) => labels.get(namespace);
}

const statusFlags = defineFlags({ config: flag.config, kubeconfig: flag.kubeconfig, namespace: flag.namespace });

/** What `observe` makes of an object, as a row's state and detail. */
function describeObservation(obs: Observation): Omit<Row, 'object'> {
  switch (obs.kind) {
    case 'learn':
      return { state: 'in sync', detail: 'stamped' };
    case 'in-sync':
      return { state: 'in sync', detail: obs.restoreStamp ? 'stamp missing or changed' : '' };
    case 'too-deep':
      return { state: 'too deep to guard', detail: 'reverted unless a trusted writer wrote it (then no longer guarded)' };
    case 'changed':
      return obs.previous
        ? { state: 'changed, not stamped', detail: `${obs.changed.join(', ')}: the leader attributes it (admission layers below)` }
        : { state: 'unknown canonical', detail: 'nothing vouches for it yet' };
    case 'unknown':
      return { state: 'unknown canonical', detail: '' };
    case 'ignore':
      return { state: 'deleting', detail: '' };
  }
}

const displayName = (group: string, resource: string, namespace: string | undefined, name: string | undefined) =>
  `${resourceName(group, resource)} ${namespace ? `${namespace}/` : ''}${name}`;

/** One row per guarded object the apiserver lists; `seen` gets their keys. */
async function listedRows(kube: KubeClient, policy: Policy, stamper: Stamper, stored: Snapshot, seen: Set<string>): Promise<Row[]> {
  const rows: Row[] = [];
  const namespaceLabels = policy.readsNamespaceLabels ? await listNamespaceLabels(kube) : undefined;
  for (const { group, version, resource, namespace: scope } of watchScopes(policy)) {
    for (const object of await Resources.of<KubeObject>(kube, group, version, resource, scope).list()) {
      const key = objectKey(group, resource, object.metadata?.namespace, object.metadata?.name ?? '');
      const entry = stored.entries.get(key);
      const matched = policy.matchStored(group, resource, object, entry, namespaceLabels);
      if (!matched) continue;
      seen.add(key);
      const name = displayName(group, resource, object.metadata?.namespace, object.metadata?.name);
      if (matched.mode === 'off') rows.push({ object: name, state: 'paused', detail: `mode off (resources[${matched.index}])` });
      else if (!matched.selection.selects(object.metadata ?? {})) {
        rows.push({ object: name, state: 'moved out', detail: 'its labels or annotations left the selection: the leader moves it back (or forgets it, for a trusted move)' });
      } else rows.push({ object: name, ...describeObservation(observe(object, matched, key, entry, stored.tombstones.get(key), stamper)) });
    }
  }
  return rows;
}

/** One row per canonical entry the apiserver no longer lists: deleted (a tombstone) or missing. */
function unlistedRows(stored: Snapshot, seen: Set<string>): Row[] {
  return [...stored.entries.keys()]
    .filter((key) => !seen.has(key))
    .map((key) => {
      const { group, resource, namespace, name } = parseObjectKey(key);
      const tombstone = stored.tombstones.get(key);
      return {
        object: displayName(group, resource, namespace, name),
        state: tombstone ? 'deleted' : 'missing',
        detail: tombstone ? `by the source of truth at ${tombstone.at}` : 'to be recreated from the canonical copy',
      };
    });
}

async function describeLeader(kube: KubeClient, namespace: string): Promise<string> {
  const lease = await Resources.of<{ metadata?: object; spec: { holderIdentity?: string; renewTime?: string } }>(kube, 'coordination.k8s.io', 'v1', 'leases', namespace).get(SPEC_GUARD);
  if (!lease) return 'none';
  return lease.spec.holderIdentity ? `${lease.spec.holderIdentity} (renewed ${lease.spec.renewTime})` : 'none (lease released)';
}

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
    const seen = new Set<string>();
    const rows = await listedRows(kube, policy, stamper, stored, seen);
    console.log(table([...rows, ...unlistedRows(stored, seen)]));
    console.log(`\nleader: ${await describeLeader(kube, namespace)}`);
    console.log(`store:  ${store.description}: ${stored.entries.size} canonical entries, ${stored.tombstones.size} tombstones`);
    console.log(`layers: ${await describeLayers(kube, policy, namespace, stored.continuity)}`);
    return 0;
  } finally {
    kube.close();
  }
}
