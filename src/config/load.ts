import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';

/** A configuration that cannot be used; `problems` holds one line per problem. */
export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: invalid configuration\n${problems.map((p) => `  ${file}: ${p}`).join('\n')}`);
  }
}

/** `resources[1].mode` from ['resources', 1, 'mode']. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(top level)';
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_value':
      return `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_type':
      return /received undefined/.test(issue.message) ? `is required (expected ${issue.expected})` : `expected ${issue.expected}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
    case 'too_small':
      return issue.origin === 'array' ? `must have at least ${String(issue.minimum)} entr${issue.minimum === 1 ? 'y' : 'ies'}` : issue.origin === 'string' ? 'must not be empty' : issue.message;
    default:
      return issue.message;
  }
}

const isEmpty = (selector: object | undefined) =>
  !selector || Object.values(selector).every((v) => v === undefined || (Array.isArray(v) ? v.length === 0 : Object.keys(v as object).length === 0));

/** Does a rule select every object of its namespaces (no name, label or annotation condition)? */
const selectsEveryObject = (rule: Config['resources'][number]) =>
  (!rule.names || rule.names.includes('*')) && isEmpty(rule.labelSelector) && isEmpty(rule.annotationSelector);

/** Checks the schema cannot express: ignore pointers must lie below a guarded path. */
function crossFieldProblems(config: Config): string[] {
  const problems: string[] = [];
  config.resources.forEach((rule, i) => {
    rule.ignore.forEach((pointer, j) => {
      if (!rule.guardedPaths.some((guarded) => pointer.startsWith(`${guarded}/`))) {
        problems.push(`resources[${i}].ignore[${j}]: ${pointer} must lie below one of the guarded paths (${rule.guardedPaths.join(', ')})`);
      }
    });
    if (rule.namespaces && rule.namespaceSelector) {
      problems.push(`resources[${i}]: namespaces and namespaceSelector exclude each other: name the namespaces, or select them by label`);
    }
    // A rule that an earlier one always wins over is never used: almost certainly a mistake.
    config.resources.slice(0, i).forEach((earlier, k) => {
      if (earlier.group !== rule.group || earlier.resource !== rule.resource) return;
      const coversNamespaces = !earlier.namespaceSelector && (!earlier.namespaces || (rule.namespaces?.every((ns) => earlier.namespaces!.includes(ns)) ?? false));
      if (selectsEveryObject(earlier) && coversNamespaces) {
        problems.push(`resources[${i}]: never used: resources[${k}] matches every ${rule.resource} it would (the first matching rule wins); put the narrower rule first`);
      }
    });
    const selectors = [
      ['labelSelector', rule.labelSelector],
      ['annotationSelector', rule.annotationSelector],
      ['namespaceSelector', rule.namespaceSelector],
    ] as const;
    for (const [field, selector] of selectors) {
      for (const req of selector?.matchExpressions ?? []) {
        const needsValues = req.operator === 'In' || req.operator === 'NotIn';
        if (needsValues !== Boolean(req.values?.length)) {
          problems.push(`resources[${i}].${field}: ${req.operator} ${needsValues ? 'needs' : 'takes no'} values`);
        }
      }
    }
  });
  return problems;
}

/** Parses and validates configuration text; `file` names it in every error. */
export function parseConfig(text: string, file: string): Config {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => `YAML syntax (line ${lineCounter.linePos(e.pos[0]).line}): ${e.message.split('\n')[0]}`),
    );
  }
  const result = configSchema.safeParse(doc.toJS() ?? {});
  if (!result.success) {
    throw new ConfigError(file, result.error.issues.map((issue) => `${formatPath(issue.path)}: ${describeIssue(issue)}`));
  }
  const problems = crossFieldProblems(result.data);
  if (problems.length > 0) throw new ConfigError(file, problems);
  return result.data;
}

export function loadConfig(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [`cannot read: ${(err as Error).message}`]);
  }
  return parseConfig(text, file);
}
