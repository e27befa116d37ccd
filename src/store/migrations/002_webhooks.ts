import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';
import { idColumn } from './001_core.js';

// Webhooks (docs/api.md, Webhooks): one endpoint configuration per App, one delivery state row per event that is to
// be delivered (keyed by the event id; `events` itself stays an append-only record), and the attempt log.
// Times are epoch ms; the API shows them as ISO strings.
export function webhooks(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      const id = () => (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());

      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('app_uid', 'text', (c) => c.primaryKey().references('apps.uid'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('secret_sealed', 'text', (c) => c.notNull())
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('previous_secret_sealed', 'text')
        .addColumn('previous_key_id', 'text')
        .addColumn('previous_valid_until', big)
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('events_filter', 'text') // JSON array of event types; null = every event
        .addColumn('disabled_reason', 'text')
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('event_id', 'text', (c) => c.primaryKey().references('events.id'))
        .addColumn('app_uid', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('event_time_ms', big, (c) => c.notNull())
        .addColumn('deadline_at', big, (c) => c.notNull())
        .addColumn('next_attempt_at', big)
        .addColumn('last_attempt_at', big)
        .addColumn('last_status_code', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('delivered_at', big)
        .addColumn('recent_attempts', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('lease_until', big)
        .addColumn('locked_by', 'text')
        .addColumn('created_at_ms', big, (c) => c.notNull())
        .addColumn('updated_at_ms', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
      await db.schema.createIndex('webhook_deliveries_app_idx').on('webhook_deliveries').columns(['app_uid', 'event_time_ms']).execute();
      await db.schema.createIndex('webhook_deliveries_app_status_idx').on('webhook_deliveries').columns(['app_uid', 'status', 'event_time_ms']).execute();

      await db.schema
        .createTable('webhook_attempts')
        .addColumn('id', idColumn(dialect), id())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('app_uid', 'text', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('attempted_at', big, (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('status_code', 'integer')
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('response_body', 'text') // the first 1 KiB, as text
        .execute();
      await db.schema.createIndex('webhook_attempts_event_idx').on('webhook_attempts').columns(['event_id', 'id']).execute();
      await db.schema.createIndex('webhook_attempts_app_idx').on('webhook_attempts').columns(['app_uid', 'id']).execute();
    },
  };
}
