import { z } from 'zod';
import { configSchema } from './schema.js';

/**
 * The configuration's JSON Schema, generated from the zod schema that validates it (the
 * input side: defaults are optional). Committed as config.schema.json for editors
 * (`# yaml-language-server: $schema=…`); a test keeps it current.
 */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, any>;
  // A removed field: an editor should flag it as unknown (additionalProperties: false).
  delete schema.properties.trust.properties.fieldManagers;
  return { ...schema, $id: 'https://github.com/spec-guard/spec-guard/config.schema.json', title: 'spec-guard configuration' };
}
