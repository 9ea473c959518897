import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import { runCli } from '../helpers/cli.js';
import { admin, ALICE, application, getJson, inCluster, installLayers, kubectl, kubectlOk, LAYER_KINDS, POLICY_DENIED, startSpecGuard, unregister, waitFor, type SpecGuard } from './harness.js';

// The principal with autonomous agents (the principal-autonomous overlay as shipped): each
// agent's Applications live in a namespace named after it, its AppProjects are copied to
// argocd as <agent>-<project>. The principal's identity writes as the real argocd-agent
// principal does; the administrator of the principal is untrusted for these copies, and
// keeps the principal's own AppProjects.
jest.setTimeout(180_000);

const OVERLAY = new URL('../../manifests/overlays/principal-autonomous/', import.meta.url);
const PRINCIPAL = 'system:serviceaccount:argocd:argocd-agent-principal';
const AGENT_LABEL = 'spec-guard.io/autonomous-agent';
const SOURCE_UID = 'argocd.argoproj.io/source-uid';
const ADMIN: string[] = [];
const describeLocal = inCluster ? describe.skip : describe;
// Namespaces of their own per run: this apiserver has no controller-manager to finish deleting one.
const RUN = Date.now().toString(36).slice(-5);
const A = `auto-${RUN}-a`;
const B = `auto-${RUN}-b`;
const TEAM = `team-${RUN}`;
const COPY = `${A}-default`;

/** The overlay's configuration, with a state Secret of its own (the other suites use theirs). */
function overlayConfig(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'spec-guard-autonomous-')), 'config.yaml');
  writeFileSync(file, readFileSync(new URL('config.yaml', OVERLAY), 'utf8').replace('secretName: spec-guard-state', 'secretName: spec-guard-e2e-autonomous'));
  return file;
}

/** The overlay's RBAC as `spec-guard manifests --rbac` renders it, under names of its own (RBAC adds up). */
function applyOverlayRbac(config: string): string {
  const out = runCli(['manifests', '--rbac', '--config', config]);
  if (out.code !== 0) throw new Error(out.stderr);
  const docs = parseAllDocuments(out.stdout).map((d) => d.toJS() as Record<string, any>);
  for (const doc of docs) {
    doc.metadata.name = `${doc.metadata.name}-e2e-autonomous`;
    if (doc.roleRef) doc.roleRef.name = `${doc.roleRef.name}-e2e-autonomous`;
  }
  const text = docs.map((d) => JSON.stringify(d)).join('\n');
  kubectlOk(ADMIN, ['apply', '--server-side', '-f', '-'], { input: text });
  return text;
}

const principalManagedFields = [
  { manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'argoproj.io/v1alpha1', time: '2026-12-01T09:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { '.': {} } } },
];

/** The principal as it writes (measured against upstream): see the autonomous-agents issue. */
const principal = {
  async request(method: string, path: string, body?: unknown, contentType?: string, query: Record<string, string> = {}) {
    return (await admin()).request<Record<string, any>>(method, path, { body, contentType, query, headers: { 'Impersonate-User': PRINCIPAL } });
  },
  /** The agent's AppProject, renamed <agent>-<project>, managedFields and all, as field manager foo. */
  createProject(agent: string, project: string, sourceRepos: string[]) {
    return this.request('POST', '/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects', {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: `${agent}-${project}`, namespace: 'argocd', annotations: { [SOURCE_UID]: `uid-of-${agent}-${project}` }, managedFields: principalManagedFields },
      spec: { sourceRepos, destinations: [{ name: agent, namespace: '*' }] },
    }, undefined, { fieldManager: 'foo' });
  },
  /** Updates replace the spec, labels and annotations wholesale (so the stamp is stripped), as argocd-agent. */
  updateProject(name: string, sourceRepos: string[], agent: string) {
    return this.request('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/${name}`, [
      { op: 'replace', path: '/spec', value: { sourceRepos, destinations: [{ name: agent, namespace: '*' }] } },
      { op: 'add', path: '/metadata/annotations', value: { [SOURCE_UID]: `uid-of-${name}` } },
      { op: 'add', path: '/metadata/labels', value: {} },
    ], 'application/json-patch+json', { fieldManager: 'argocd-agent' });
  },
  /** AppProjects are deleted with Foreground propagation. */
  deleteProject(name: string) {
    return this.request('DELETE', `/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/${name}`, { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Foreground' });
  },
  /** The agent's Application in the agent's namespace: project renamed, destination.name the agent. */
  createApplication(agent: string, name: string) {
    const body = JSON.parse(application(name, agent, { project: `${agent}-default`, destination: { name: agent, namespace: 'guestbook' } }));
    body.metadata.managedFields = principalManagedFields;
    return this.request('POST', `/apis/argoproj.io/v1alpha1/namespaces/${agent}/applications`, body, undefined, { fieldManager: 'foo' });
  },
};

const stampOf = (kind: string, namespace: string, name: string): string | undefined => getJson([kind, '-n', namespace, name]).metadata.annotations?.[STAMP_ANNOTATION];
const waitForStamp = (kind: string, namespace: string, name: string) => waitFor(`${kind} ${namespace}/${name} stamped`, () => stampOf(kind, namespace, name)?.startsWith('v2.'), 10_000, 100);
const sourceRepos = (name: string): string[] => getJson(['appproject', '-n', 'argocd', name]).spec.sourceRepos;

function agentNamespace(name: string): void {
  kubectlOk(ADMIN, ['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [AGENT_LABEL]: 'true' } } }) });
}

/** A clean slate for one spec-guard: no admission objects, no Lease, the agent's namespace, the overlay's config and RBAC. */
function prepare(agent: string): { config: string; rbac: string } {
  unregister();
  kubectl(ADMIN, ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
  agentNamespace(agent);
  const config = overlayConfig();
  return { config, rbac: applyOverlayRbac(config) };
}

/** Stops spec-guard and removes what the suite made (namespaces stay Terminating: no controller-manager here). */
async function cleanUp(sg: SpecGuard | undefined, rbac: string, projects: string[], namespaces: string[]): Promise<void> {
  await sg?.stop();
  unregister();
  kubectl(ADMIN, ['delete', 'appproject', '-n', 'argocd', ...projects, '--ignore-not-found', '--wait=false']);
  kubectl(ADMIN, ['delete', 'namespace', ...namespaces, '--ignore-not-found', '--wait=false']);
  kubectl(ADMIN, ['delete', 'secret', '-n', 'spec-guard', 'spec-guard-e2e-autonomous', '--ignore-not-found']);
  if (rbac) kubectl(ADMIN, ['delete', '-f', '-', '--ignore-not-found'], { input: rbac });
}

describeLocal('autonomous agents on the principal (the principal-autonomous overlay)', () => {
  let sg: SpecGuard | undefined;
  let rbac = '';

  beforeAll(async () => {
    const prepared = prepare(A);
    rbac = prepared.rbac;
    kubectl(ADMIN, ['create', 'namespace', TEAM]);
    // The principal's own project, as Argo CD installs it.
    kubectl(ADMIN, ['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'default', namespace: 'argocd' }, spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }] } }) });
    sg = await startSpecGuard(prepared.config);
    // In force once the admission policy refuses to label an agent namespace out (validating
    // policies run before validating webhooks; for Applications the mutating webhook answers first).
    await waitFor('the admission policy in force', () => kubectl(ADMIN, ['label', 'namespace', A, `${AGENT_LABEL}-`, '--dry-run=server']).stderr.includes(POLICY_DENIED), 15_000, 100);
    await principal.createProject(A, 'default', ['https://github.com/example/*']);
    await principal.createApplication(A, 'guestbook');
  });

  afterAll(() => cleanUp(sg, rbac, [COPY, `${A}-other`, 'team-x'], [A, B, TEAM]));

  it('1. the synced Application and AppProject copies are stamped', async () => {
    await waitForStamp('appproject', 'argocd', COPY);
    await waitForStamp('application', A, 'guestbook');
  });

  it('2. untrusted edits and deletes of both copies are refused, the administrator’s included', () => {
    for (const who of [ADMIN, ALICE]) {
      const project = kubectl(who, ['patch', 'appproject', '-n', 'argocd', COPY, '--type=merge', '-p', '{"spec":{"sourceRepos":["*"]}}']);
      expect(project.code).not.toBe(0);
      expect(project.stderr).toContain(`/spec of AppProject argocd/${COPY} is owned by the source of truth`);
      const app = kubectl(who, ['patch', 'application', '-n', A, 'guestbook', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
      expect(app.code).not.toBe(0);
      expect(kubectl(who, ['delete', 'appproject', '-n', 'argocd', COPY, '--wait=false']).stderr).toContain(`deleting AppProject argocd/${COPY} is reserved for the source of truth`);
      expect(kubectl(who, ['delete', 'application', '-n', A, 'guestbook', '--wait=false']).code).not.toBe(0);
    }
    expect(sourceRepos(COPY)).toEqual(['https://github.com/example/*']);
  });

  it('3. the administrator edits, creates and deletes the principal’s own AppProjects', () => {
    kubectlOk(ADMIN, ['patch', 'appproject', '-n', 'argocd', 'default', '--type=merge', '-p', '{"spec":{"sourceRepos":["https://github.com/org/*"]}}']);
    expect(sourceRepos('default')).toEqual(['https://github.com/org/*']);
    kubectlOk(ADMIN, ['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'team-x', namespace: 'argocd' }, spec: { sourceRepos: ['*'] } }) });
    kubectlOk(ADMIN, ['patch', 'appproject', '-n', 'argocd', 'team-x', '--type=merge', '-p', '{"spec":{"description":"team x"}}']);
    kubectlOk(ADMIN, ['delete', 'appproject', '-n', 'argocd', 'team-x']);
    // Applications outside the agents' namespaces are the principal's own too.
    kubectlOk(ADMIN, ['create', '-f', '-'], { input: application('own', TEAM) });
    kubectlOk(ADMIN, ['patch', 'application', '-n', TEAM, 'own', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"v2"}}}']);
  });

  it('4. a new agent namespace with the label is guarded, with no configuration change', async () => {
    agentNamespace(B);
    await principal.createApplication(B, 'billing');
    await waitForStamp('application', B, 'billing');
    const edit = kubectl(ADMIN, ['patch', 'application', '-n', B, 'billing', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
    expect(edit.code).not.toBe(0);
    expect(edit.stderr).toContain(`Application ${B}/billing`);
  });

  it('5. no escape from the selection: by the annotation, by the namespace label, by a rename, by a look-alike copy', () => {
    // The annotation that marks a synced copy cannot be removed, even with the spec left alone.
    const annotation = kubectl(ADMIN, ['annotate', 'appproject', '-n', 'argocd', COPY, `${SOURCE_UID}-`]);
    expect(annotation.code).not.toBe(0);
    expect(annotation.stderr).toContain('into or out of a guarded selection');
    // The namespace cannot be labelled out of the agents' namespaces.
    for (const change of [[`${AGENT_LABEL}-`], [`${AGENT_LABEL}=false`, '--overwrite']]) {
      const label = kubectl(ADMIN, ['label', 'namespace', A, ...change]);
      expect(label.code).not.toBe(0);
      expect(label.stderr).toContain(`takes namespace ${A} out of the namespaces`);
    }
    // Nor through the namespace's status and finalize subresources, which keep label changes.
    const escaped = (ns: Record<string, any>) => {
      const copy = structuredClone(ns);
      delete copy.metadata.labels[AGENT_LABEL];
      return JSON.stringify(copy);
    };
    const viaStatus = kubectl(ADMIN, ['patch', 'namespace', A, '--subresource=status', '--type=json', '-p', JSON.stringify([{ op: 'remove', path: `/metadata/labels/${AGENT_LABEL.replace('/', '~1')}` }])]);
    expect(viaStatus.code).not.toBe(0);
    expect(viaStatus.stderr).toContain(`takes namespace ${A} out of the namespaces`);
    const viaFinalize = kubectl(ADMIN, ['replace', '--raw', `/api/v1/namespaces/${A}/finalize`, '-f', '-'], { input: escaped(getJson(['namespace', A])) });
    expect(viaFinalize.code).not.toBe(0);
    expect(viaFinalize.stderr).toContain(`takes namespace ${A} out of the namespaces`);
    expect(getJson(['namespace', A]).metadata.labels[AGENT_LABEL]).toBe('true');
    // Names are immutable: a "rename" is a write to another name, which the apiserver refuses.
    const project = getJson(['appproject', '-n', 'argocd', COPY]);
    project.metadata.name = 'mine';
    expect(kubectl(ADMIN, ['replace', '-f', '-'], { input: JSON.stringify(project) }).code).not.toBe(0);
    // A copy under another name, still marked as synced, is a create reserved for the principal.
    const copy = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: `${A}-other`, namespace: 'argocd', annotations: { [SOURCE_UID]: 'forged' } }, spec: { sourceRepos: ['*'] } };
    expect(kubectl(ADMIN, ['create', '-f', '-'], { input: JSON.stringify(copy) }).stderr).toContain('reserved for the source of truth');
    // Labelling a namespace into the selection is the administrator's to do.
    kubectlOk(ADMIN, ['label', 'namespace', TEAM, 'purpose=apps']);
  });

  it('6. with spec-guard down, the admission policy alone refuses the same edits and escapes, and admits the administrator’s own', async () => {
    await sg!.stop();
    const refusedByPolicy = (r: { code: number; stderr: string }) => r.code !== 0 && r.stderr.includes(POLICY_DENIED);
    expect(refusedByPolicy(kubectl(ADMIN, ['patch', 'appproject', '-n', 'argocd', COPY, '--type=merge', '-p', '{"spec":{"sourceRepos":["*"]}}']))).toBe(true);
    expect(refusedByPolicy(kubectl(ADMIN, ['patch', 'application', '-n', B, 'billing', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']))).toBe(true);
    expect(refusedByPolicy(kubectl(ADMIN, ['annotate', 'appproject', '-n', 'argocd', COPY, `${SOURCE_UID}-`]))).toBe(true);
    expect(refusedByPolicy(kubectl(ADMIN, ['label', 'namespace', B, `${AGENT_LABEL}-`]))).toBe(true);
    expect(refusedByPolicy(kubectl(ADMIN, ['delete', 'application', '-n', A, 'guestbook', '--wait=false']))).toBe(true);
    kubectlOk(ADMIN, ['patch', 'appproject', '-n', 'argocd', 'default', '--type=merge', '-p', '{"spec":{"description":"edited while spec-guard is down"}}']);
    kubectlOk(ADMIN, ['patch', 'application', '-n', TEAM, 'own', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"v3"}}}']);
    sg = await startSpecGuard(overlayConfig());
  });

  it('7. the principal’s updates (annotations replaced wholesale) pass and get their stamp back; its Foreground delete stays deleted', async () => {
    const before = stampOf('appproject', 'argocd', COPY);
    const updated = await principal.updateProject(COPY, ['https://github.com/example/*', 'https://github.com/other/*'], A);
    expect(updated.metadata.annotations[STAMP_ANNOTATION]).toMatch(/^v2\./);
    expect(updated.metadata.annotations[STAMP_ANNOTATION]).not.toBe(before);
    expect(updated.metadata.annotations[SOURCE_UID]).toBe(`uid-of-${COPY}`);

    await principal.deleteProject(COPY);
    // Where the apiserver holds the object for the garbage collector (foregroundDeletion), the
    // collector's part is played by hand: this control plane runs no controller-manager.
    const finalizers = kubectl(ADMIN, ['get', 'appproject', '-n', 'argocd', COPY, '-o', 'jsonpath={.metadata.finalizers}']).stdout;
    if (finalizers.includes('foregroundDeletion')) {
      const gc = ['--as=system:serviceaccount:kube-system:generic-garbage-collector'];
      kubectlOk(gc, ['patch', 'appproject', '-n', 'argocd', COPY, '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
    }
    await waitFor('the copy to be gone', () => kubectl(ADMIN, ['get', 'appproject', '-n', 'argocd', COPY]).code !== 0, 5_000, 100);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(kubectl(ADMIN, ['get', 'appproject', '-n', 'argocd', COPY]).code).not.toBe(0);
    expect(sg!.logs()).not.toMatch(new RegExp(`deleted object recreated[^\\n]*${COPY}`));
  });
});

describeLocal('autonomous agents: the watcher, behind admission', () => {
  const C = `auto-${RUN}-c`;
  const CCOPY = `${C}-default`;
  let sg: SpecGuard | undefined;
  let rbac = '';

  beforeAll(async () => {
    const { config, rbac: applied } = prepare(C);
    rbac = applied;
    // Only the stamp webhook (the mutating configuration without its guard webhook): untrusted
    // writes pass admission, as in a blind window of the guard layer; trusted ones are stamped.
    sg = await startSpecGuard(config, ['--no-register']);
    await sg.waitForLog(/became the leader/);
    installLayers(config, sg, LAYER_KINDS.stamp);
    const mutating = getJson(['mutatingwebhookconfiguration', 'spec-guard']);
    const guard = mutating.webhooks.findIndex((w: { name: string }) => w.name === 'guard.spec-guard.io');
    kubectlOk(ADMIN, ['patch', 'mutatingwebhookconfiguration', 'spec-guard', '--type=json', '-p', JSON.stringify([{ op: 'remove', path: `/webhooks/${guard}` }])]);
    await principal.createProject(C, 'default', ['https://github.com/example/*']);
    await principal.createApplication(C, 'guestbook');
    await waitForStamp('appproject', 'argocd', CCOPY);
    await waitForStamp('application', C, 'guestbook');
  });

  afterAll(() => cleanUp(sg, rbac, [CCOPY], [C]));

  it('8. an AppProject copy moved out of its selection (annotation removed) and widened behind admission is moved back and restored', async () => {
    kubectlOk(ADMIN, ['patch', 'appproject', '-n', 'argocd', CCOPY, '--type=json', '-p', JSON.stringify([
      { op: 'remove', path: `/metadata/annotations/${SOURCE_UID.replace('/', '~1')}` },
      { op: 'replace', path: '/spec/sourceRepos', value: ['*'] },
    ])]);
    await waitFor('the copy restored', () => {
      const project = getJson(['appproject', '-n', 'argocd', CCOPY]);
      return project.metadata.annotations?.[SOURCE_UID] === `uid-of-${C}-default` && project.spec.sourceRepos.join() === 'https://github.com/example/*';
    }, 5_000, 100);
  });

  it('9. an agent’s Application edited behind admission, in a namespace selected by its label, is reverted', async () => {
    kubectlOk(ADMIN, ['patch', 'application', '-n', C, 'guestbook', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
    await waitFor('the Application reverted', () => getJson(['application', '-n', C, 'guestbook']).spec.source.targetRevision === 'HEAD', 5_000, 100);
  });
});
