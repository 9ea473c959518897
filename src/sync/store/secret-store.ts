import { Resources, secretPath, type KubeClient, type Secret } from '../../kube/index.js';
import type { ContinuityRecord } from '../../guard/attribution.js';
import { packEntry, type CanonicalEntry, type Tombstone } from '../../guard/index.js';
import { TombstoneWriter } from './tombstone-writer.js';
import {
  ENTRIES_KEY,
  TOUCHES_KEY,
  INDEX_KEY,
  TOMBSTONES_KEY,
  CONTINUITY_KEY,
  MAX_SECRET_BYTES,
  MIN_SHARDS,
  GROW_BYTES,
  INDEX_FORMAT,
  JOURNAL_APPEND_BYTES,
  FOLD_MIN_BYTES,
  type Layout,
  type Journal,
  touchIn,
  encodedBytes,
  gzipJson,
  gunzipJson,
  mergeJournal,
  shardOf,
  tombstonesIn,
} from './secret-format.js';
import { applyTouch, isTouch, type Touch } from './touch.js';
import { emptySnapshot, evictionReport, type CanonicalStore, type Snapshot, type StoreReport } from './types.js';
import { MANAGED_BY_LABEL } from '../../names.js';

/**
 * Canonical state in Secrets of spec-guard's namespace, shared by every replica: the
 * leader writes the entry shards, any replica adds tombstones (read-modify-write with
 * the resourceVersion, retried on conflict). The entries are spread over gzipped shards
 * whose number grows with the state: a write rewrites only the shards holding a changed
 * entry; a shard past half a Secret's limit doubles the count, written as a new generation
 * of shards that an index Secret switches to in one write (a kill before the switch leaves
 * the previous generation whole; the next resharding removes the leftovers).
 */
export class SecretStore implements CanonicalStore {
  readonly description: string;
  readonly shared = true;
  private layout: Layout | undefined;
  /** Set while the store is in the layout from before the index: the first write moves it. */
  private legacy = false;
  private readonly shardVersions = new Map<string, string>();
  /** The newest journal Secret of the current layout as this replica knows it, to append to while it is small. */
  private lastJournal: { index: number; content: Journal } | undefined;
  private indexVersion: string | undefined;
  private continuityVersion: string | undefined;
  /** Bytes last written, per Secret name: what `usage()` reports. */
  private readonly sizes = new Map<string, number>();
  private readonly secrets: Resources<Secret>;

  constructor(
    kube: KubeClient,
    private readonly namespace: string,
    private readonly name: string,
    private readonly report: StoreReport = () => undefined,
  ) {
    this.secrets = new Resources<Secret>(kube, secretPath(namespace));
    this.description = `secret ${namespace}/${name}-index (and its shards), ${name}-tombstones and ${name}-continuity`;
  }

  private read(name: string): Promise<Secret | undefined> {
    return this.secrets.get(name);
  }

  /** The Secret `name` holding `data`, at `resourceVersion` (none: to be created). */
  private body(name: string, data: Record<string, string>, resourceVersion: string | undefined): Secret {
    return { metadata: { name, namespace: this.namespace, labels: { ...MANAGED_BY_LABEL }, resourceVersion }, type: 'Opaque', data };
  }

  /** Writes `data` to Secret `name` over whatever version is stored (only the leader writes these); returns the new version. */
  private async overwrite(name: string, data: Record<string, string>, knownVersion: string | undefined): Promise<string | undefined> {
    return (await this.secrets.overwrite(name, (version) => this.body(name, data, version), knownVersion)).metadata.resourceVersion;
  }

  private readonly shardName = (layout: Layout, shard: number) => `${this.name}-g${layout.generation}-${shard}`;
  private readonly journalName = (layout: Layout, index: number) => `${this.name}-g${layout.generation}-j${index}`;

  /**
   * Reads the given Secrets in order, applying each one's entries (a null entry removes its
   * key; a touch that finds another value is not applied); returns the last one's.
   */
  private async readShards(names: string[], into: Map<string, CanonicalEntry>): Promise<Journal | undefined> {
    let last: Journal | undefined;
    for (const name of names) {
      const secret = await this.read(name);
      if (!secret) continue;
      this.shardVersions.set(name, secret.metadata.resourceVersion!);
      const raw = secret.data?.[ENTRIES_KEY];
      if (!raw) continue;
      this.sizes.set(name, encodedBytes(secret.data!));
      const entries = gunzipJson(raw) as Record<string, CanonicalEntry | null>;
      const rawTouches = secret.data?.[TOUCHES_KEY];
      const touches = (rawTouches ? gunzipJson(rawTouches) : {}) as Record<string, Touch>;
      // A key is whole or touched within one Secret (a touch of an entry it holds is folded in).
      for (const [key, entry] of Object.entries(entries)) {
        if (entry) into.set(key, packEntry(entry));
        else into.delete(key);
      }
      for (const [key, touch] of Object.entries(touches)) {
        if (!isTouch(touch)) throw new Error(`${name}: the touch of ${key} is malformed`);
        const touched = applyTouch(into.get(key), touch);
        if (touched) into.set(key, touched);
      }
      last = { ...entries, ...Object.fromEntries(Object.entries(touches).map(([key, touch]) => [key, { touch }])) };
    }
    return last;
  }

  async load(): Promise<Snapshot> {
    const snapshot = emptySnapshot();
    const index = await this.readIndex();
    if (index) {
      this.layout = index;
      await this.readShards(Array.from({ length: index.shards }, (_, i) => this.shardName(index, i)), snapshot.entries);
      const last = await this.readShards(Array.from({ length: index.journal }, (_, i) => this.journalName(index, i)), snapshot.entries);
      this.lastJournal = last && index.journal > 0 ? { index: index.journal - 1, content: last } : undefined;
    } else {
      await this.readShards(Array.from({ length: MIN_SHARDS }, (_, i) => `${this.name}-${i}`), snapshot.entries);
      this.legacy = snapshot.entries.size > 0;
    }
    snapshot.tombstones = await this.readTombstonesSecret();
    const continuity = await this.read(`${this.name}-continuity`);
    this.continuityVersion = continuity?.metadata.resourceVersion;
    const rawContinuity = continuity?.data?.[CONTINUITY_KEY];
    if (rawContinuity) snapshot.continuity = JSON.parse(Buffer.from(rawContinuity, 'base64').toString('utf8')) as ContinuityRecord;
    return snapshot;
  }

  async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>, touched: ReadonlyMap<string, Touch> = new Map()): Promise<void> {
    await this.followIndex();
    const layout = this.layout;
    const full = layout && [...this.sizes].some(([name, size]) => name.startsWith(`${this.name}-g${layout.generation}-`) && size > GROW_BYTES);
    if (!layout || this.legacy || full) return this.reshard(entries, layout ? layout.shards * (full ? 2 : 1) : MIN_SHARDS);
    // Most of the state changed (a new leader writes it all), or the journals outgrew the
    // shards: fold everything into a new generation of shards. Else append to the journal
    // (touches too: the revisions a relist raises are a small fraction of the entries).
    const bytes = (kind: RegExp) => [...this.sizes].filter(([name]) => name.startsWith(`${this.name}-g${layout.generation}-`) && kind.test(name)).reduce((n, [, size]) => n + size, 0);
    if (changed.size * 2 >= entries.size || bytes(/-j\d+$/) > Math.max(bytes(/-\d+$/), FOLD_MIN_BYTES)) return this.reshard(entries, layout.shards);
    await this.appendJournal(layout, entries, changed, touched);
  }

  /**
   * Writes the changed entries as journal Secrets: into the newest one while it is small
   * (rewritten whole, one atomic write), else into new ones, which the index then counts. A
   * kill before the index write leaves them uncounted: not read, and overwritten next time.
   */
  private async appendJournal(layout: Layout, entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>, touched: ReadonlyMap<string, Touch>): Promise<void> {
    const delta: Journal = {};
    for (const key of changed) delta[key] = entries.get(key) ?? null;
    for (const [key, touch] of touched) delta[key] = { touch };
    const last = this.lastJournal;
    const appendable = last && last.index === layout.journal - 1 && (this.sizes.get(this.journalName(layout, last.index)) ?? Infinity) < JOURNAL_APPEND_BYTES;
    let first = appendable ? last.index : layout.journal;
    let chunks = await this.encodeChunks(appendable ? mergeJournal(last.content, delta) : delta);
    if (appendable && chunks.length > 1) {
      first = layout.journal;
      chunks = await this.encodeChunks(delta);
    }
    for (const [i, chunk] of chunks.entries()) await this.writeShard(this.journalName(layout, first + i), chunk.data);
    const journal = Math.max(layout.journal, first + chunks.length);
    if (journal !== layout.journal) await this.writeIndex({ ...layout, journal });
    this.lastJournal = { index: first + chunks.length - 1, content: chunks.at(-1)!.content };
  }

  /** `content` encoded in as few Secrets as fit (halving until each is under GROW_BYTES). */
  private async encodeChunks(content: Journal): Promise<Array<{ content: Journal; data: Record<string, string> }>> {
    const data = await this.encode(content);
    const keys = Object.keys(content);
    if (encodedBytes(data) <= GROW_BYTES || keys.length < 2) return [{ content, data }];
    const half = Math.ceil(keys.length / 2);
    const part = (from: number, to: number) => Object.fromEntries(keys.slice(from, to).map((k) => [k, content[k]!]));
    return [...(await this.encodeChunks(part(0, half))), ...(await this.encodeChunks(part(half, keys.length)))];
  }

  /**
   * Takes the layout the index names: another leader may have resharded since this replica
   * loaded (a new leader writes every entry at once, so its writes land where the index points).
   */
  private async followIndex(): Promise<void> {
    const index = await this.readIndex();
    if (!index) return;
    if (index.generation === this.layout?.generation) {
      // Another leader may have appended journals meanwhile: continue after them.
      if (index.journal !== this.layout.journal) this.lastJournal = undefined;
      this.layout = index;
      return;
    }
    this.layout = index;
    this.lastJournal = undefined;
    this.legacy = false;
    for (const name of [...this.sizes.keys()]) if (name.startsWith(`${this.name}-g`)) this.sizes.delete(name);
    this.shardVersions.clear();
  }

  /** The layout the index Secret names (remembering its version), if there is one. */
  private async readIndex(): Promise<Layout | undefined> {
    const index = await this.read(`${this.name}-index`);
    const raw = index?.data?.[INDEX_KEY];
    if (!raw) return undefined;
    const layout = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as Layout & { format?: string };
    if (layout.format !== INDEX_FORMAT || !Number.isInteger(layout.generation) || !(layout.shards >= MIN_SHARDS)) throw new Error(`${this.name}-index is not a ${INDEX_FORMAT} index`);
    this.indexVersion = index!.metadata.resourceVersion;
    return { generation: layout.generation, shards: layout.shards, journal: Number.isInteger(layout.journal) ? layout.journal : 0 };
  }

  /** The entries of the given shards (all when `only` is absent), one pass over the state. */
  private group(entries: ReadonlyMap<string, CanonicalEntry>, shards: number, only?: ReadonlySet<number>): Map<number, Record<string, CanonicalEntry>> {
    const contents = new Map<number, Record<string, CanonicalEntry>>();
    for (const shard of only ?? Array.from({ length: shards }, (_, i) => i)) contents.set(shard, {});
    for (const [key, entry] of entries) {
      const content = contents.get(shardOf(key, shards));
      if (content) content[key] = entry;
    }
    return contents;
  }

  /** Whole entries (and removals) under ENTRIES_KEY, touches (if any) under TOUCHES_KEY. */
  private async encode(content: Journal): Promise<Record<string, string>> {
    const whole: Record<string, CanonicalEntry | null> = {};
    const touches: Record<string, Touch> = {};
    for (const [key, value] of Object.entries(content)) {
      const touch = touchIn(value);
      if (touch) touches[key] = touch;
      else whole[key] = value as CanonicalEntry | null;
    }
    return { [ENTRIES_KEY]: await gzipJson(whole), ...(Object.keys(touches).length ? { [TOUCHES_KEY]: await gzipJson(touches) } : {}) };
  }

  private async writeShard(name: string, data: Record<string, string>): Promise<void> {
    this.sizes.set(name, encodedBytes(data));
    // A conflict (a former leader wrote last) or a missing Secret: its version is taken and overwritten.
    this.shardVersions.set(name, (await this.overwrite(name, data, this.shardVersions.get(name)))!);
  }

  /**
   * Writes every entry as a new generation of `shards` shards (doubling until each fits half
   * a Secret), switches the index to it, then removes the shards of earlier generations.
   */
  private async reshard(entries: ReadonlyMap<string, CanonicalEntry>, shards: number): Promise<void> {
    let next: Layout = { generation: (this.layout?.generation ?? 0) + 1, shards, journal: 0 };
    while (!(await this.writeShards(entries, next))) next = { ...next, shards: next.shards * 2 };
    await this.writeIndex(next);
    this.lastJournal = undefined;
    this.legacy = false;
    await this.removeEarlierShards(next.generation);
  }

  /**
   * Each shard encoded just before it is written, so the event loop (admission) turns between
   * shards. False at the first one too big: a layout with more shards writes over these (the
   * index does not count them yet).
   */
  private async writeShards(entries: ReadonlyMap<string, CanonicalEntry>, layout: Layout): Promise<boolean> {
    for (const [i, content] of this.group(entries, layout.shards)) {
      const data = await this.encode(content);
      if (encodedBytes(data) > GROW_BYTES) return false;
      await this.writeShard(this.shardName(layout, i), data);
    }
    return true;
  }

  /** Switches the index to `layout` (one write: what a load reads from then on). */
  private async writeIndex(layout: Layout): Promise<void> {
    const index = { [INDEX_KEY]: Buffer.from(JSON.stringify({ format: INDEX_FORMAT, ...layout })).toString('base64') };
    this.indexVersion = await this.overwrite(`${this.name}-index`, index, this.indexVersion);
    this.layout = layout;
  }

  /** Shards of generations before `generation` (and of the layout before the index): no longer read. */
  private async removeEarlierShards(generation: number): Promise<void> {
    const list = await this.secrets.list({ labelSelector: Object.entries(MANAGED_BY_LABEL).map(([k, v]) => `${k}=${v}`).join(',') });
    const prefix = `${this.name}-`;
    const earlier = list
      .map((secret) => secret.metadata.name!)
      .filter((name) => {
        if (!name.startsWith(prefix)) return false;
        const rest = name.slice(prefix.length);
        const shard = /^g(\d+)-j?\d+$/.exec(rest);
        return /^\d+$/.test(rest) || (shard !== null && Number(shard[1]) < generation);
      });
    for (const name of earlier) {
      await this.secrets.delete(name);
      this.sizes.delete(name);
      this.shardVersions.delete(name);
    }
  }

  /** Overwrites the continuity record (only the leader writes it; a conflict takes the current version). */
  async saveContinuity(record: ContinuityRecord): Promise<void> {
    const name = `${this.name}-continuity`;
    const data = { [CONTINUITY_KEY]: Buffer.from(JSON.stringify(record)).toString('base64') };
    this.continuityVersion = await this.overwrite(name, data, this.continuityVersion);
  }

  private async readTombstonesSecret(): Promise<Map<string, Tombstone>> {
    return tombstonesIn(await this.read(`${this.name}-tombstones`));
  }

  /** Read-modify-write of the tombstones Secret; a conflict (another replica wrote) re-reads and applies again. */
  private async writeTombstones(change: (current: Map<string, Tombstone>) => Map<string, Tombstone>): Promise<void> {
    const name = `${this.name}-tombstones`;
    await this.secrets.update(name, (secret) => {
      const data = { [TOMBSTONES_KEY]: Buffer.from(JSON.stringify(Object.fromEntries(change(tombstonesIn(secret))))).toString('base64') };
      this.sizes.set(name, data[TOMBSTONES_KEY].length);
      return this.body(name, data, undefined);
    });
  }

  private readonly tombstones = new TombstoneWriter((change) => this.writeTombstones(change), Date.now, (keys) => evictionReport(this.report)(keys));

  usage(): number {
    return Math.max(0, ...this.sizes.values()) / MAX_SECRET_BYTES;
  }

  addTombstone(key: string, tombstone: Tombstone): Promise<void> {
    return this.tombstones.set(key, tombstone);
  }

  removeTombstone(key: string): Promise<void> {
    return this.tombstones.set(key, null);
  }

  readTombstones(): Promise<Map<string, Tombstone>> {
    return this.readTombstonesSecret();
  }
}
