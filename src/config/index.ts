export { loadConfig, parseConfig, ConfigError } from './load.js';
export type { Config, ResourceRuleConfig, LabelSelector, AnnotationSelector, Mode, NormalizerName } from './schema.js';
export { configJsonSchema } from './json-schema.js';
