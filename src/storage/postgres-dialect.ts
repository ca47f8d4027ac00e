import { PostgresDialect, sql, type DatabaseIntrospector, type DatabaseMetadataOptions, type DialectAdapter, type Kysely, type TableMetadata } from 'kysely';
import { TransactionScopedMigrationLock } from './migration-lock.js';

/**
 * Kysely's PostgreSQL introspector reads the columns of every schema in the database, calling
 * pg_get_serial_sequence on each. Its one user here is the migrator, which asks whether its own
 * tables exist. On a database shared by several schemas (the tests make one per file; an operator
 * may run several services) that read is slow, and it fails with "column … does not exist" when
 * another schema's migration drops a column meanwhile. This one reads the current schema only.
 */
class CurrentSchemaIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<unknown>,
    private readonly kyselys: DatabaseIntrospector,
  ) {}

  getSchemas() {
    return this.kyselys.getSchemas();
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<{ schema: string; table: string; type: string; column: string | null; data_type: string; nullable: string; default_value: string | null }>`
      select t.table_schema as schema, t.table_name as table, t.table_type as type, c.column_name as column,
             c.udt_name as data_type, c.is_nullable as nullable, c.column_default as default_value
      from information_schema.tables t
      left join information_schema.columns c on c.table_schema = t.table_schema and c.table_name = t.table_name
      where t.table_schema = current_schema()
      order by t.table_name, c.ordinal_position`.execute(this.db);
    const tables = new Map<string, TableMetadata>();
    for (const row of rows) {
      if (!options.withInternalKyselyTables && row.table.startsWith('kysely_migration')) continue;
      let table = tables.get(row.table);
      if (!table) tables.set(row.table, (table = { name: row.table, schema: row.schema, isView: row.type === 'VIEW', columns: [] }));
      if (row.column === null) continue;
      table.columns.push({
        name: row.column,
        dataType: row.data_type,
        isNullable: row.nullable === 'YES',
        hasDefaultValue: row.default_value !== null,
        isAutoIncrementing: row.default_value?.startsWith('nextval(') ?? false,
      });
    }
    return [...tables.values()];
  }

  async getMetadata(options?: DatabaseMetadataOptions) {
    return { tables: await this.getTables(options) };
  }
}

/**
 * The PostgreSQL dialect the service uses: Kysely's, with introspection that stays in the
 * connection's current schema (above), and a migration lock held by a transaction
 * (migration-lock.ts: it works through PgBouncer).
 */
export class ServicePostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db, super.createIntrospector(db));
  }

  override createAdapter(): DialectAdapter {
    return new TransactionScopedMigrationLock();
  }
}
