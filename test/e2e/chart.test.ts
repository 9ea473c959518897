import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parseAllDocuments, parse } from 'yaml';
import { kubectl, kubectlOk } from './harness.js';

// The Helm chart renders what the kustomize overlays render, for the same settings; the real
// apiserver accepts it; bad values are refused by its schema with a clear message.
const root = new URL('../../', import.meta.url).pathname;
const CHART = `${root}charts/spec-guard`;
const helmBin = process.env.SPEC_GUARD_HELM ?? `${root}.cache/bin/helm`;
type Doc = Record<string, any>;

function helm(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(helmBin, args, { encoding: 'utf8' });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

const docs = (text: string): Doc[] => parseAllDocuments(text).map((d) => d.toJS() as Doc).filter(Boolean);

function helmTemplate(values: string[]): Doc[] {
  const r = helm(['template', 'spec-guard', CHART, '--namespace', 'spec-guard', ...values]);
  if (r.code !== 0) throw new Error(r.stderr);
  return docs(r.stdout);
}

/** The overlay, optionally with the GitOps component, as kubectl's kustomize renders it. */
function kustomize(overlay: string, gitops: boolean): Doc[] {
  let dir = `manifests/overlays/${overlay}`;
  if (gitops) {
    dir = `.cache/kustomize/${overlay}-gitops`;
    mkdirSync(`${root}${dir}`, { recursive: true });
    writeFileSync(`${root}${dir}/kustomization.yaml`, `resources: [../../../manifests/overlays/${overlay}]\ncomponents: [../../../manifests/components/gitops]\n`);
  }
  return docs(kubectlOk([], ['kustomize', `${root}${dir}`]));
}

const HELM_LABELS = ['app.kubernetes.io/instance', 'app.kubernetes.io/version', 'app.kubernetes.io/managed-by', 'helm.sh/chart'];

/**
 * What differs by construction, taken out: Helm's own labels, kustomize's ConfigMap name
 * hash (Helm rolls the pods with a checksum annotation instead), the config file's comments
 * (compared parsed), the image pull policy the apiserver defaults, RBAC rules' grouping
 * (compared as permissions).
 */
function normalize(doc: Doc): Doc {
  const d = structuredClone(doc);
  for (const key of HELM_LABELS) delete d.metadata.labels?.[key];
  if (d.kind === 'ConfigMap') {
    d.metadata.name = d.metadata.name.replace(/-[a-z0-9]{10}$/, '');
    d.data = { 'config.yaml': parse(d.data['config.yaml']) };
  }
  if (d.kind === 'Deployment') {
    const pod = d.spec.template;
    delete pod.metadata.annotations?.['checksum/config'];
    if (pod.metadata.annotations && !Object.keys(pod.metadata.annotations).length) delete pod.metadata.annotations;
    for (const v of pod.spec.volumes) if (v.configMap) v.configMap.name = v.configMap.name.replace(/-[a-z0-9]{10}$/, '');
    for (const c of pod.spec.containers) if (c.imagePullPolicy === 'IfNotPresent') delete c.imagePullPolicy;
  }
  if (d.rules) {
    const permissions = new Set<string>();
    for (const rule of d.rules) {
      for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) for (const n of rule.resourceNames ?? ['*']) permissions.add(`${g}/${r}/${v}/${n}`);
    }
    d.rules = [...permissions].sort();
  }
  return d;
}

const byIdentity = (objects: Doc[]) => new Map(objects.map((o) => [`${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name.replace(/-[a-z0-9]{10}$/, '')}`, normalize(o)]));

const profiles = [
  { overlay: 'managed-agent', gitops: false, values: [] as string[] },
  { overlay: 'principal-autonomous', gitops: false, values: ['--set', 'profile=principal-autonomous'] },
  { overlay: 'managed-agent', gitops: true, values: ['--set', 'register=false'] },
];

describe('charts/spec-guard', () => {
  it('passes helm lint, for each profile', () => {
    for (const { values } of profiles) {
      const r = helm(['lint', CHART, ...values]);
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it.each(profiles)('renders what kustomize renders for $overlay (GitOps: $gitops), object by object', ({ overlay, gitops, values }) => {
    const fromHelm = byIdentity(helmTemplate(values).filter((o) => !o.metadata.annotations?.['helm.sh/hook']));
    // The Namespace is kustomize's alone: Helm installs into an existing one (--create-namespace).
    const fromKustomize = byIdentity(kustomize(overlay, gitops).filter((o) => o.kind !== 'Namespace'));
    expect([...fromHelm.keys()].sort()).toEqual([...fromKustomize.keys()].sort());
    for (const [identity, object] of fromKustomize) expect({ identity, object: fromHelm.get(identity) }).toEqual({ identity, object });
  });

  it.each(profiles.slice(0, 2))('the real apiserver accepts the $overlay render (server-side apply, dry run), helm test included', ({ values }) => {
    const rendered = helmTemplate(values);
    expect(rendered.some((o) => o.kind === 'Pod' && o.metadata.annotations['helm.sh/hook'] === 'test')).toBe(true);
    // Dry run, forcing conflicts: the suite's spec-guard was installed from the kustomize overlay under the same names.
    const applied = kubectl([], ['apply', '--server-side', '--dry-run=server', '--force-conflicts', '--field-manager=helm', '-f', '-'], { input: rendered.map((o) => JSON.stringify(o)).join('\n') });
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('deployment.apps/spec-guard serverside-applied');
  });

  it('pins the image by digest when given one', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const deployment = helmTemplate(['--set', `image.digest=${digest}`]).find((o) => o.kind === 'Deployment')!;
    expect(deployment.spec.template.spec.containers[0].image).toBe(`ghcr.io/spec-guard/spec-guard@${digest}`);
  });

  it.each([
    [['--set', 'profile=principal'], "at '/profile': value must be one of 'managed-agent', 'principal-autonomous'"],
    [['--set', 'image.digest=latest'], "at '/image/digest': 'latest' does not match pattern"],
    [['--set', 'config.resources[0].group=argoproj.io', '--set', 'config.resources[0].resource=Application'], "at '/config/resources/0/resource': 'Application' does not match pattern"],
    [['--set', 'replicas=0'], "at '/replicas': minimum: got 0, want 1"],
    [['--set', 'registr=false'], "additional properties 'registr' not allowed"],
  ])('refuses bad values (%j) with a message that names the value', (values, message) => {
    const r = helm(['template', 'spec-guard', CHART, ...values]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    expect(r.stderr).toContain(message);
  });
});
