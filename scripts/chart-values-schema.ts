// Prints the Helm chart's values.schema.json: the chart's own values, and `config` checked
// by the configuration's JSON Schema (generated from the zod schema). `npm run schema`
// writes it; a unit test keeps it current.
import { pathToFileURL } from 'node:url';
import { configJsonSchema } from '../src/config/index.js';

export function chartValuesSchema(): Record<string, unknown> {
  const { $schema: _schema, $id: _id, title: _title, ...config } = configJsonSchema();
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'spec-guard Helm chart values',
    type: 'object',
    additionalProperties: false,
    properties: {
      profile: {
        description: 'The layout: on a managed agent cluster, or on the principal for autonomous agents. Picks the configuration when `config` is empty.',
        enum: ['managed-agent', 'principal-autonomous'],
      },
      config: {
        description: "spec-guard's configuration (config.schema.json); empty: the profile's.",
        anyOf: [{ type: 'object', maxProperties: 0 }, config],
      },
      image: {
        type: 'object',
        additionalProperties: false,
        properties: {
          repository: { type: 'string', minLength: 1 },
          tag: { type: 'string' },
          digest: { type: 'string', pattern: '^(sha256:[a-f0-9]{64})?$', description: 'sha256:… (64 hex digits); when set the image is pulled by digest' },
          pullPolicy: { enum: ['Always', 'IfNotPresent', 'Never'] },
        },
      },
      replicas: { type: 'integer', minimum: 1 },
      register: { type: 'boolean', description: 'false: a GitOps install applies the admission objects itself (spec-guard runs --no-register)' },
      clientAuthentication: {
        enum: ['apiserver', 'none'],
        description: "apiserver: only the apiserver's front-proxy client certificate is heard (--client-ca-from-cluster); none: anyone who reaches the port",
      },
      resources: { type: 'object' },
      nodeOptions: { type: 'string' },
      metricsScrapeNamespaces: {
        type: 'array',
        items: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
        description: 'Namespaces whose pods may scrape the metrics port (the NetworkPolicy), besides any labelled spec-guard.io/metrics=allowed',
      },
    },
    required: ['profile'],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.stdout.write(`${JSON.stringify(chartValuesSchema(), null, 2)}\n`);
