import { resourceName } from './object-key.js';
import type { Config, Mode, ResourceRuleConfig } from '../config/schema.js';
import { GuardedView } from './guarded-view.js';
import { normalizers } from './normalizers.js';
import { compileSelection, type NamespaceLabels, type Selectable, type Selection, type SelectionKeys } from './selection.js';
import type { CanonicalEntry } from './canonical-entry.js';
import { compileOwnership, type Ownership } from './ownership.js';
import type { KubeObject } from '../kube/types.js';

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
  selection: Selection;
  /** Who may change which door (the source of truth, the consumer, nobody else). */
  ownership: Ownership;
}

/** The compiled configuration: who is trusted, which objects are guarded and how. */
export class Policy {
  private readonly users: Set<string>;
  private readonly groups: Set<string>;
  private readonly breakGlass: Set<string>;
  readonly rules: Rule[];
  private readonly byResource = new Map<string, Rule[]>();
  private readonly selectionKeysOf = new Map<string, SelectionKeys>();
  /** Does any rule select namespaces by their labels (so namespace labels must be known)? */
  readonly readsNamespaceLabels: boolean;

  /** `selfUser` is spec-guard's own identity: always trusted, so its reverts pass. */
  constructor(
    readonly config: Config,
    readonly selfUser?: string,
  ) {
    this.users = new Set(config.trust.users);
    if (selfUser) this.users.add(selfUser);
    this.groups = new Set([...config.trust.groups, ...config.trust.breakGlassGroups]);
    this.breakGlass = new Set(config.trust.breakGlassGroups);
    this.rules = config.resources.map((rc, index) => ({
      index,
      config: rc,
      mode: rc.mode,
      view: new GuardedView(rc.guardedPaths, rc.ignore, rc.normalizer ? normalizers[rc.normalizer] : undefined),
      selection: compileSelection(rc),
      ownership: compileOwnership(rc, config.trust.normalizedWriters),
    }));
    for (const rule of this.rules) {
      const key = `${rule.config.group}/${rule.config.resource}`;
      this.byResource.set(key, [...(this.byResource.get(key) ?? []), rule]);
    }
    this.readsNamespaceLabels = this.rules.some((r) => r.selection.byNamespaceLabels);
  }

  /**
   * The metric label of a resource: configured resources by name, anything else `other`,
   * so that no request body can add a label set.
   */
  resourceLabel(group: string, resource: string): string {
    return this.byResource.has(`${group}/${resource}`) ? resourceName(group, resource) : 'other';
  }

  /** Every group whose members are trusted: the configured ones and the break-glass ones. */
  get trustedGroups(): string[] {
    return [...this.groups];
  }

  /** Is this a break-glass write: trusted only through a break-glass group? */
  isBreakGlass(user: UserInfo | undefined): boolean {
    if (!user || (user.username !== undefined && this.users.has(user.username))) return false;
    const groups = user.groups ?? [];
    return groups.some((g) => this.breakGlass.has(g)) && !groups.some((g) => this.groups.has(g) && !this.breakGlass.has(g));
  }

  isTrusted(user: UserInfo | undefined): boolean {
    if (!user) return false;
    if (user.username !== undefined && this.users.has(user.username)) return true;
    return (user.groups ?? []).some((g) => this.groups.has(g));
  }

  /**
   * The first rule that guards an object. Every given version counts (its name, labels and
   * annotations), so an untrusted writer cannot escape a selection by changing the object in
   * the same write.
   */
  match(
    group: string,
    resource: string,
    namespace: string | undefined,
    versions: Array<Selectable | undefined>,
    namespaceLabels?: NamespaceLabels,
  ): Rule | undefined {
    for (const rule of this.byResource.get(`${group}/${resource}`) ?? []) {
      if (!rule.selection.inNamespace(namespace, namespaceLabels)) continue;
      if (versions.some((v) => v && rule.selection.selects(v))) return rule;
    }
    return undefined;
  }

  /**
   * The rule that guards a stored object: by what it is, or by what its canonical copy was
   * (an object moved out of its selection behind admission stays guarded, to be moved back).
   */
  matchStored(group: string, resource: string, object: KubeObject, entry: CanonicalEntry | undefined, namespaceLabels?: NamespaceLabels): Rule | undefined {
    const canonical = entry && { name: object.metadata?.name, labels: entry.labels, annotations: entry.annotations };
    return this.match(group, resource, object.metadata?.namespace, [object.metadata ?? {}, canonical], namespaceLabels);
  }

  /**
   * The rules that select namespaces by label and would no longer select this namespace
   * after its labels change: taking a namespace out of a selection unguards its objects.
   */
  namespaceLeaves(namespace: string, before: Record<string, string> | undefined, after: Record<string, string> | undefined): Rule[] {
    return this.rules.filter(
      (r) => r.selection.byNamespaceLabels && r.mode !== 'off' && r.selection.inNamespace(namespace, () => before ?? {}) && !r.selection.inNamespace(namespace, () => after ?? {}),
    );
  }

  /** Every label and annotation key the rules of a resource select by (worked out once per resource: the watcher asks for every version). */
  selectionKeys(group: string, resource: string): SelectionKeys {
    const id = `${group}/${resource}`;
    let keys = this.selectionKeysOf.get(id);
    if (!keys) {
      const rules = this.byResource.get(id) ?? [];
      keys = {
        labelKeys: [...new Set(rules.flatMap((r) => r.selection.keys.labelKeys))],
        annotationKeys: [...new Set(rules.flatMap((r) => r.selection.keys.annotationKeys))],
      };
      // Only the configured resources are remembered: a review of any other resource adds nothing.
      if (rules.length) this.selectionKeysOf.set(id, keys);
    }
    return keys;
  }
}
