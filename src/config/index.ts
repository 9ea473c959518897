export { loadConfig, parseConfig, ConfigError } from './load.js';
export type { Config, ResourceRuleConfig, LabelSelector, Mode, NormalizerName } from './schema.js';
export { configJsonSchema } from './json-schema.js';
