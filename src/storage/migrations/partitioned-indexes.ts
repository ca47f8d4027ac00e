import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

/**
 * Indexes on the partitioned delivery log, built without blocking its writers (docs/deployment.md,
 * "Upgrades without downtime"). A migration runs in one transaction, where PostgreSQL refuses
 * `CREATE INDEX CONCURRENTLY`; so a migration that indexes the log (`notifications`,
 * `notification_attempts`) creates the index `ON ONLY` the partitioned table: a catalogue change,
 * at once, the index invalid. Partitions made from then on get their own at creation. This step,
 * after the migrations' commit, builds each older partition's index `CONCURRENTLY` (writes go on)
 * and attaches it; once every partition has its own, PostgreSQL marks the index valid. Until then
 * the queries that would use it still work, only slower.
 *
 * Every start runs it after the migrations, before the process serves (in a rolling upgrade the
 * previous release's processes serve meanwhile), and so does `rewards migrate`. Two processes may
 * run it at once: a partition's index already attached is skipped, one another process is still
 * building (invalid) is left to it, and what fails is logged and tried again at the next start or
 * `rewards migrate`. A build that died leaves an invalid partition index: `rewards migrate`
 * (`repair`) drops it and builds it again.
 */

interface Unfinished {
  /** The partitioned index, as `pg_get_indexdef` prints it (`CREATE INDEX name ON ONLY schema.table USING …`). */
  definition: string;
  index: string;
  schema: string;
}

interface PartitionIndex {
  partition: string;
  /** Its index of the same definition, if one is there: attached or not, valid or not. */
  existing: string | null;
  valid: boolean;
  attached: boolean;
}

async function unfinishedIndexes(db: Kysely<unknown>): Promise<Unfinished[]> {
  const { rows } = await sql<Unfinished>`select pg_get_indexdef(i.indexrelid) as definition, c.relname as index, n.nspname as schema
      from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace join pg_class t on t.oid = i.indrelid
      where t.relkind = 'p' and not i.indisvalid and n.nspname = current_schema()`.execute(db);
  return rows;
}

/** The partition's own index name: the parent's with the partition's suffix, within PostgreSQL's 63 bytes. */
const childName = (index: string, partition: string) => `${index}_${partition}`.slice(0, 63);

/**
 * Builds and attaches the missing partition indexes of every unfinished partitioned index
 * (PostgreSQL; nothing on SQLite, which has no partitions and builds its indexes in the
 * migration). `repair`: an invalid partition index left by a build that died is dropped and built
 * again (only `rewards migrate` asks: at a start it may be another process's build in progress).
 * Answers the partition indexes it built.
 */
export async function finishPartitionedIndexes(db: Kysely<unknown>, options: { repair?: boolean; log?: (message: string, error?: unknown) => void } = {}): Promise<string[]> {
  if (!dialectOf(db).partitionedLog) return [];
  const built: string[] = [];
  for (const index of await unfinishedIndexes(db)) {
    for (const partition of await childIndexes(db, index)) {
      const name = childName(index.index, partition.partition);
      try {
        if (partition.attached) continue;
        if (partition.existing && !partition.valid) {
          if (!options.repair) continue;
          await sql`drop index concurrently if exists ${sql.id(index.schema, name)}`.execute(db);
        }
        // An empty partition (a new database's, or one made ahead of its period) is indexed at once;
        // one with rows CONCURRENTLY, which waits for the transactions already running.
        const table = `${quote(index.schema)}.${quote(partition.partition)}`;
        const { rows } = await sql<{ found: boolean }>`select exists (select 1 from ${sql.raw(table)}) as found`.execute(db);
        const concurrently = rows[0]?.found ? 'CONCURRENTLY ' : '';
        const definition = index.definition.replace(
          /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+/,
          (_, unique: string | undefined) => `CREATE ${unique ?? ''}INDEX ${concurrently}IF NOT EXISTS ${quote(name)} ON ${table}`,
        );
        await sql.raw(definition).execute(db);
        await sql`alter index ${sql.id(index.schema, index.index)} attach partition ${sql.id(index.schema, name)}`.execute(db);
        built.push(name);
      } catch (error) {
        options.log?.(`could not finish ${name} (the index ${index.index} on the delivery log's partition ${partition.partition}); the next start or \`rewards migrate\` tries again`, error);
      }
    }
  }
  return built;
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/** Each partition of the index's table, with the index of our naming on it, if any. */
async function childIndexes(db: Kysely<unknown>, index: Unfinished): Promise<PartitionIndex[]> {
  const parent = `${quote(index.schema)}.${quote(index.index)}`;
  const { rows } = await sql<{ partition: string; existing: string | null; valid: boolean | null; attached: boolean }>`
      select p.relname as partition, ci.relname as existing, x.indisvalid as valid,
             coalesce(exists (select 1 from pg_inherits ih join pg_class a on a.oid = ih.inhrelid
                              where ih.inhparent = ${parent}::regclass and a.oid in (select indexrelid from pg_index where indrelid = p.oid)), false) as attached
      from pg_index pi
      join pg_inherits h on h.inhparent = pi.indrelid
      join pg_class p on p.oid = h.inhrelid
      left join pg_class ci on ci.relnamespace = p.relnamespace and ci.relname = left(${index.index} || '_' || p.relname, 63)
      left join pg_index x on x.indexrelid = ci.oid
      where pi.indexrelid = ${parent}::regclass`.execute(db);
  return rows.map((row) => ({ partition: row.partition, existing: row.existing, valid: row.valid === true, attached: row.attached }));
}
