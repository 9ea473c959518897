import { describe, expect, it } from '@jest/globals';
import { ConfigError, parseConfig } from '../../src/config/index.js';

function problems(yaml: string): string[] {
  try {
    parseConfig(yaml, 'spec-guard.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected the configuration to be refused');
}

describe('configuration', () => {
  it('fills in the documented defaults', () => {
    const config = parseConfig('resources:\n  - group: argoproj.io\n    resource: applications\n', 'c.yaml');
    expect(config.trust).toEqual({
      users: ['system:serviceaccount:argocd:argocd-agent-agent'],
      groups: [],
      breakGlassGroups: [],
      normalizedWriters: ['system:serviceaccount:argocd:argocd-application-controller'],
    });
    expect(config.resources[0]).toEqual({
      group: 'argoproj.io',
      resource: 'applications',
      version: 'v1alpha1',
      mode: 'enforce',
      guardedPaths: ['/spec'],
      consumerPaths: [],
      consumedPaths: [],
      ignore: [],
      creates: 'deny',
      deletes: 'deny',
      blindWindow: { changes: 'revert', deletes: 'keep-deleted' },
    });
    expect(config.trust.fieldManagers).toBeUndefined();
    expect(config.store.type).toBe('file');
  });

  it('refuses trust.fieldManagers, saying why: managedFields are not evidence', () => {
    expect(problems('trust:\n  fieldManagers: [argocd-agent]\nresources:\n  - group: argoproj.io\n    resource: applications\n')).toEqual([
      expect.stringMatching(/^trust\.fieldManagers: is no longer supported: managedFields are not evidence/),
    ]);
    expect(problems('resources:\n  - group: argoproj.io\n    resource: applications\n    blindWindow: {deletes: resurrect}\n')).toEqual([
      'resources[0].blindWindow.deletes: must be one of keep-deleted, recreate',
    ]);
  });

  it('names the path of every problem, one line each', () => {
    const yaml = [
      'resources:',
      '  - group: argoproj.io',
      '    resource: applications',
      '  - group: argoproj.io',
      '    resource: appprojects',
      '    mode: block',
      '    guardedPaths: [spec]',
      '    creates: maybe',
      '    colour: blue',
    ].join('\n');
    expect(problems(yaml)).toEqual([
      'resources[1].mode: must be one of enforce, rewrite, warn, off',
      'resources[1].guardedPaths[0]: must be an RFC 6901 JSON pointer starting with "/" (e.g. /spec)',
      'resources[1].creates: must be one of deny, allow',
      'resources[1]: unknown field colour',
    ]);
  });

  it('says which field is missing and what it expects', () => {
    expect(problems('resources:\n  - group: argoproj.io\n')).toEqual(['resources[0].resource: is required (expected string)']);
    expect(problems('trust: {}\n')).toEqual(['resources: is required (expected array)']);
  });

  it('refuses ignore pointers outside the guarded paths and bad selectors', () => {
    const yaml = [
      'resources:',
      '  - group: argoproj.io',
      '    resource: applications',
      '    ignore: [/status/health]',
      '    labelSelector:',
      '      matchExpressions: [{key: tier, operator: In}]',
    ].join('\n');
    expect(problems(yaml)).toEqual([
      'resources[0].ignore[0]: /status/health must lie below one of the guarded paths (/spec)',
      'resources[0].labelSelector: In needs values',
    ]);
  });

  it('reports YAML syntax errors with the line', () => {
    const [problem] = problems('resources:\n  - group: [unclosed\n');
    expect(problem).toMatch(/^YAML syntax \(line \d+\)/);
  });

  it('names the file in the message', () => {
    expect(() => parseConfig('resources: []\n', '/etc/spec-guard/config.yaml')).toThrow(
      '/etc/spec-guard/config.yaml: resources: must have at least 1 entry',
    );
  });

  it('does not guess a version outside argoproj.io (a wrong guess froze the cluster at start)', () => {
    expect(problems('resources:\n  - group: apps\n    resource: deployments\n')).toEqual([
      'resources[0].version: required for group "apps": the served version spec-guard lists and watches (e.g. v1)',
    ]);
    expect(parseConfig('resources:\n  - group: apps\n    resource: deployments\n    version: v1\n', 'c.yaml').resources[0]!.version).toBe('v1');
    expect(parseConfig('resources:\n  - group: argoproj.io\n    resource: applications\n', 'c.yaml').resources[0]!.version).toBe('v1alpha1');
  });

  it('wants the lower-case plural resource name, not the kind', () => {
    expect(problems('resources:\n  - group: argoproj.io\n    resource: Application\n')[0]).toMatch(/resources\[0\]\.resource: must be the lower-case plural resource name/);
  });

  it('refuses a rule that an earlier one always wins over', () => {
    const yaml = 'resources:\n  - group: argoproj.io\n    resource: applications\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    mode: warn\n';
    expect(problems(yaml)).toEqual([
      'resources[1]: never used: resources[0] matches every applications it would (the first matching rule wins); put the narrower rule first',
    ]);
    // Narrower first is fine, and so is a selective earlier rule.
    expect(() => parseConfig('resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n  - group: argoproj.io\n    resource: applications\n', 'c.yaml')).not.toThrow();
  });
});

describe('the configuration JSON Schema', () => {
  it('config.schema.json is what the zod schema generates (npm run schema), and the examples point at it', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const { configJsonSchema } = await import('../../src/config/index.js');
    const root = new URL('../../', import.meta.url);
    expect(JSON.parse(readFileSync(new URL('config.schema.json', root), 'utf8'))).toEqual(configJsonSchema());
    for (const file of readdirSync(new URL('examples/', root)).filter((f) => f.endsWith('.yaml'))) {
      expect(readFileSync(new URL(`examples/${file}`, root), 'utf8')).toMatch(/^# yaml-language-server: \$schema=\.\.\/config\.schema\.json\n/);
    }
  });
});
