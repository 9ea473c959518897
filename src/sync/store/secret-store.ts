import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { isConflict, isNotFound, secretPath, type KubeClient, type Secret } from '../../kube/index.js';
import type { ContinuityRecord } from '../../guard/attribution.js';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import { TombstoneWriter } from './tombstone-writer.js';
import { emptySnapshot, type CanonicalStore, type Snapshot } from './types.js';
import { MANAGED_BY_LABEL } from '../../names.js';

/** Entries are spread over this many Secrets, each gzipped, to stay far below 1 MiB apiece. */
export const SHARDS = 16;
const ENTRIES_KEY = 'entries.json.gz';
const TOMBSTONES_KEY = 'tombstones.json';
const CONTINUITY_KEY = 'continuity.json';
const MAX_SECRET_BYTES = 1024 * 1024;

const shardOf = (key: string) => createHash('sha256').update(key).digest()[0]! % SHARDS;

/**
 * Canonical state in Secrets of spec-guard's namespace, shared by every replica: the
 * leader writes the entry shards, any replica adds tombstones (read-modify-write with
 * the resourceVersion, retried on conflict).
 */
export class SecretStore implements CanonicalStore {
  readonly description: string;
  private readonly shardVersions = new Map<number, string>();
  private continuityVersion: string | undefined;
  /** Bytes last written, per Secret name: what `usage()` reports. */
  private readonly sizes = new Map<string, number>();

  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.description = `secret ${namespace}/${name}-{0..${SHARDS - 1}}, ${name}-tombstones and ${name}-continuity`;
  }

  private async read(name: string): Promise<Secret | undefined> {
    try {
      return await this.kube.request<Secret>('GET', secretPath(this.namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async write(name: string, data: Record<string, string>, resourceVersion: string | undefined): Promise<Secret> {
    const body: Secret = {
      metadata: { name, namespace: this.namespace, labels: { ...MANAGED_BY_LABEL }, resourceVersion },
      type: 'Opaque',
      data,
    };
    return resourceVersion
      ? this.kube.request<Secret>('PUT', secretPath(this.namespace, name), { body })
      : this.kube.request<Secret>('POST', secretPath(this.namespace), { body });
  }

  async load(): Promise<Snapshot> {
    const snapshot = emptySnapshot();
    for (let shard = 0; shard < SHARDS; shard++) {
      const secret = await this.read(`${this.name}-${shard}`);
      if (!secret) continue;
      this.shardVersions.set(shard, secret.metadata.resourceVersion!);
      const raw = secret.data?.[ENTRIES_KEY];
      if (!raw) continue;
      const entries = JSON.parse(gunzipSync(Buffer.from(raw, 'base64')).toString('utf8')) as Record<string, CanonicalEntry>;
      for (const [key, entry] of Object.entries(entries)) snapshot.entries.set(key, entry);
    }
    snapshot.tombstones = await this.readTombstonesSecret();
    const continuity = await this.read(`${this.name}-continuity`);
    this.continuityVersion = continuity?.metadata.resourceVersion;
    const raw = continuity?.data?.[CONTINUITY_KEY];
    if (raw) snapshot.continuity = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as ContinuityRecord;
    return snapshot;
  }

  async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>): Promise<void> {
    const dirty = new Set([...changed].map(shardOf));
    for (const shard of dirty) {
      const content: Record<string, CanonicalEntry> = {};
      for (const [key, entry] of entries) if (shardOf(key) === shard) content[key] = entry;
      const data = { [ENTRIES_KEY]: gzipSync(JSON.stringify(content)).toString('base64') };
      if (data[ENTRIES_KEY].length > MAX_SECRET_BYTES) {
        throw new Error(`shard ${shard} needs ${data[ENTRIES_KEY].length} bytes, over a Secret's 1 MiB`);
      }
      const name = `${this.name}-${shard}`;
      this.sizes.set(name, data[ENTRIES_KEY].length);
      for (let attempt = 0; ; attempt++) {
        try {
          const saved = await this.write(name, data, this.shardVersions.get(shard));
          this.shardVersions.set(shard, saved.metadata.resourceVersion!);
          break;
        } catch (err) {
          // Conflict (a former leader wrote last) or a missing Secret: take its version and overwrite.
          if (attempt >= 3 || !(isConflict(err) || isNotFound(err))) throw err;
          const current = await this.read(name);
          if (current) this.shardVersions.set(shard, current.metadata.resourceVersion!);
          else this.shardVersions.delete(shard);
        }
      }
    }
  }

  /** Overwrites the continuity record (only the leader writes it; a conflict takes the current version). */
  async saveContinuity(record: ContinuityRecord): Promise<void> {
    const name = `${this.name}-continuity`;
    const data = { [CONTINUITY_KEY]: Buffer.from(JSON.stringify(record)).toString('base64') };
    for (let attempt = 0; ; attempt++) {
      try {
        this.continuityVersion = (await this.write(name, data, this.continuityVersion)).metadata.resourceVersion;
        return;
      } catch (err) {
        if (attempt >= 3 || !(isConflict(err) || isNotFound(err))) throw err;
        this.continuityVersion = (await this.read(name))?.metadata.resourceVersion;
      }
    }
  }

  private async readTombstonesSecret(): Promise<Map<string, Tombstone>> {
    const secret = await this.read(`${this.name}-tombstones`);
    const raw = secret?.data?.[TOMBSTONES_KEY];
    return new Map(raw ? Object.entries(JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as Record<string, Tombstone>) : []);
  }

  /** Read-modify-write of the tombstones Secret; a conflict (another replica wrote) re-reads and applies again. */
  private async writeTombstones(change: (current: Map<string, Tombstone>) => Map<string, Tombstone>): Promise<void> {
    const name = `${this.name}-tombstones`;
    for (let attempt = 0; ; attempt++) {
      const secret = await this.read(name);
      const raw = secret?.data?.[TOMBSTONES_KEY];
      const next = change(new Map(raw ? Object.entries(JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as Record<string, Tombstone>) : []));
      const data = { [TOMBSTONES_KEY]: Buffer.from(JSON.stringify(Object.fromEntries(next))).toString('base64') };
      this.sizes.set(name, data[TOMBSTONES_KEY].length);
      try {
        await this.write(name, data, secret?.metadata.resourceVersion);
        return;
      } catch (err) {
        if (attempt >= 10 || !isConflict(err)) throw err; // 409: another replica wrote (or created) it first
      }
    }
  }

  private readonly tombstones = new TombstoneWriter((change) => this.writeTombstones(change));

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
