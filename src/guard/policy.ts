import type { Config, LabelSelector, Mode, ResourceRuleConfig } from '../config/schema.js';
import { GuardedView } from './guarded-view.js';
import { normalizers } from './normalizers.js';

export interface UserInfo {
  username?: string;
  groups?: string[];
}

/** A resource rule ready for matching, with its guarded view built once. */
export interface Rule {
  index: number;
  config: ResourceRuleConfig;
  mode: Mode;
  view: GuardedView;
  namespaces: Set<string> | undefined;
  matchesLabels: (labels: Record<string, string> | undefined) => boolean;
}

function selectorMatcher(selector: LabelSelector | undefined): Rule['matchesLabels'] {
  if (!selector || (!selector.matchLabels && !selector.matchExpressions?.length)) return () => true;
  return (labels = {}) => {
    for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
    for (const req of selector.matchExpressions ?? []) {
      const has = Object.hasOwn(labels, req.key);
      const inValues = has && (req.values ?? []).includes(labels[req.key]!);
      const ok =
        req.operator === 'In' ? inValues : req.operator === 'NotIn' ? !inValues : req.operator === 'Exists' ? has : !has;
      if (!ok) return false;
    }
    return true;
  };
}

/** The compiled configuration: who is trusted, which objects are guarded and how. */
export class Policy {
  private readonly users: Set<string>;
  private readonly groups: Set<string>;
  readonly rules: Rule[];
  private readonly byResource = new Map<string, Rule[]>();

  /** `selfUser` is spec-guard's own identity: always trusted, so its reverts pass. */
  constructor(
    readonly config: Config,
    readonly selfUser?: string,
  ) {
    this.users = new Set(config.trust.users);
    if (selfUser) this.users.add(selfUser);
    this.groups = new Set(config.trust.groups);
    this.rules = config.resources.map((rc, index) => ({
      index,
      config: rc,
      mode: rc.mode,
      view: new GuardedView(rc.guardedPaths, rc.ignore, rc.normalizer ? normalizers[rc.normalizer] : undefined),
      namespaces: rc.namespaces ? new Set(rc.namespaces) : undefined,
      matchesLabels: selectorMatcher(rc.labelSelector),
    }));
    for (const rule of this.rules) {
      const key = `${rule.config.group}/${rule.config.resource}`;
      this.byResource.set(key, [...(this.byResource.get(key) ?? []), rule]);
    }
  }

  /**
   * The metric label of a resource: configured resources by name, anything else `other`,
   * so that no request body can add a label set.
   */
  resourceLabel(group: string, resource: string): string {
    return this.byResource.has(`${group}/${resource}`) ? `${resource}.${group}` : 'other';
  }

  isTrusted(user: UserInfo | undefined): boolean {
    if (!user) return false;
    if (user.username !== undefined && this.users.has(user.username)) return true;
    return (user.groups ?? []).some((g) => this.groups.has(g));
  }

  /**
   * The first rule that guards an object. Labels of every given version count, so an
   * untrusted writer cannot escape a selector by changing the labels in the same write.
   */
  match(
    group: string,
    resource: string,
    namespace: string | undefined,
    labelSets: Array<Record<string, string> | undefined>,
  ): Rule | undefined {
    for (const rule of this.byResource.get(`${group}/${resource}`) ?? []) {
      if (rule.namespaces && !rule.namespaces.has(namespace ?? '')) continue;
      if (labelSets.some((labels) => rule.matchesLabels(labels))) return rule;
    }
    return undefined;
  }
}
