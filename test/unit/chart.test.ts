import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { chartValuesSchema } from '../../scripts/chart-values-schema.js';
import { chartRbac } from '../../scripts/chart-rbac.js';

const root = new URL('../../', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, root), 'utf8');

describe('the image', () => {
  it('ships a distroless Node.js 24 base pinned by digest, the Node.js the suite runs on', () => {
    const runtime = read('Dockerfile').split('\n').filter((l) => l.startsWith('FROM ')).pop()!;
    expect(runtime).toMatch(/^FROM gcr\.io\/distroless\/nodejs24-debian12:nonroot@sha256:[a-f0-9]{64}$/);
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});

describe('the Helm chart', () => {
  it('values.schema.json is current (npm run schema), and checks `config` with the configuration schema', () => {
    expect(JSON.parse(read('charts/spec-guard/values.schema.json'))).toEqual(chartValuesSchema());
    expect(JSON.stringify(chartValuesSchema())).toContain('"normalizedWriters"');
  });

  it('the RBAC rules that do not depend on the configuration come from render-rbac.ts (files/rbac.yaml current, and the template hard-codes none)', () => {
    expect(read('charts/spec-guard/files/rbac.yaml')).toBe(chartRbac());
    const template = read('charts/spec-guard/templates/rbac.yaml');
    expect(template).toContain('.Files.Get "files/rbac.yaml"');
    expect(template).not.toMatch(/resources: \[(secrets|leases|selfsubjectreviews|serviceaccounts|clusterroles|namespaces|events)\]/);
  });

  it.each(['managed-agent', 'principal-autonomous'])('the %s profile is the kustomize overlay’s configuration, byte for byte', (profile) => {
    expect(read(`charts/spec-guard/profiles/${profile}.yaml`)).toBe(read(`manifests/overlays/${profile}/config.yaml`));
  });
});

describe('compatibility', () => {
  it('the chart’s kubeVersion is the README table’s minimum Kubernetes, and the suite runs on a supported version', () => {
    const row = read('README.md').split('\n').find((l) => l.startsWith('| Kubernetes |'))!;
    const minimum = /\| >= (\d+\.\d+) \|/.exec(row)![1];
    expect(read('charts/spec-guard/Chart.yaml')).toContain(`kubeVersion: ">=${minimum}.0-0"`);
    const tested = /KUBE_VERSION_DEFAULT=v(\d+\.\d+)\./.exec(read('scripts/versions.sh'))![1];
    expect(tested).toBe(minimum);
  });
});
