/**
 * Row types, one interface per table. Conventions shared by both dialects:
 * times are epoch milliseconds (bigint on PostgreSQL, integer on SQLite), booleans are 0/1
 * integers and structured values are JSON text, so that one repository serves both databases.
 */
import type { Prize } from '../../domain/experiences/experience.js';

export interface AccountsTable {
  id: string;
  name: string;
  is_operator: number;
  active: number;
  created_at: number;
}

export interface OAuthClientsTable {
  client_id: string;
  account_id: string;
  /** Space-separated scopes the client may request. */
  scopes: string;
  secret_hash: string;
  /** The secret replaced by the last rotation; accepted until previous_secret_expires_at. */
  previous_secret_hash: string | null;
  previous_secret_expires_at: number | null;
  active: number;
  created_at: number;
  updated_at: number;
}

export interface SigningKeysTable {
  kid: string;
  algorithm: string;
  public_jwk: string;
  /** PKCS#8 private key, encrypted with SECRET_KEY (see domain/crypto/secret-box). */
  private_key_encrypted: string;
  created_at: number;
  /** Set when a newer key takes over signing. */
  retired_at: number | null;
  /** After this instant no token signed by the key can still be valid: it leaves the JWKS. */
  expires_at: number | null;
}

export interface ExperiencesTable {
  id: string;
  account_id: string;
  /** The key reward requests use (`experience` in POST /requests); unique per account. */
  name: string;
  title: string;
  active: number;
  /** JSON array of the request `event` values allowed; empty = any. */
  events: string;
  created_at: number;
  updated_at: number;
}

/** A prize's row: the domain's Prize, with its experience and its place in it. */
export interface PrizesTable extends Prize {
  experience_id: string;
  /** Order of the prize inside its experience. */
  position: number;
}

export interface SubscriptionsTable {
  id: string;
  account_id: string;
  /** Singular form: `registered-request` or `processed-request`. */
  event: string;
  description: string;
  active: number;
  /** JSON array of experience names; empty = every experience. */
  experiences: string;
  callback_url: string;
  /** The callback's authorization object as JSON, encrypted with SECRET_KEY; null = none. */
  callback_authorization_encrypted: string | null;
  /** JSON object of header name → value. */
  callback_custom_headers: string;
  created_at: number;
  updated_at: number;
  /** Set when the service switched the subscription off (auto-disable); cleared when it is re-enabled. */
  disabled_reason: string | null;
  disabled_at: number | null;
  /** Deliveries per second at most, across every worker; null = no limit. */
  rate_limit: number | null;
}

/** Standard Webhooks secrets of a subscription, or of an account's default (subscription_id null). */
export interface WebhookSigningSecretsTable {
  id: string;
  account_id: string;
  subscription_id: string | null;
  /** `whsec_…`, encrypted with SECRET_KEY. */
  secret_encrypted: string;
  created_at: number;
  /** null while current; set by rotation, after which the secret stops signing. */
  expires_at: number | null;
}

import type { HISTOGRAM_COLUMNS } from '../migrations/009_delivery_operations.js';
import type { IdempotencyKeysTable, JobsTable, RequestEventsTable, RequestsTable } from './requests-jobs.js';

export type { IdempotencyKeysTable, JobsTable, RequestEventsTable, RequestsTable } from './requests-jobs.js';
import type { NotificationAttemptsTable, NotificationsTable } from './notifications.js';

export type { NotificationAttemptsTable, NotificationsTable } from './notifications.js';

/** Attempts of one subscription in one five-minute bucket (its start, epoch ms); `le_N`: latency histogram (ms). */
type SubscriptionStatsTable = {
  subscription_id: string;
  bucket_start: number;
  succeeded: number;
  retry: number;
  failed: number;
} & Record<(typeof HISTOGRAM_COLUMNS)[number], number>;

/** A subscription's last success and failure and its current run of failed attempts. */
export interface SubscriptionHealthTable {
  subscription_id: string;
  last_success_at: number | null;
  last_success_status: number | null;
  last_failure_at: number | null;
  last_failure_status: number | null;
  last_failure_error: string | null;
  consecutive_failures: number;
  /** When the current run of failures began (null when the last attempt succeeded). */
  failing_since: number | null;
}

/** A rate-limited subscription's current one-second window and the deliveries it granted. */
interface SubscriptionRateWindowsTable {
  subscription_id: string;
  window_start: number;
  granted: number;
}

/** A one-time console sign-in code (docs/console.md): only its SHA-256 is stored. */
export interface ConsoleLinksTable {
  id: string;
  account_id: string;
  /** SHA-256 (hex) of the code; the code itself is never stored. */
  code_hash: string;
  created_at: number;
  /** The code cannot be exchanged from this instant on. */
  expires_at: number;
  /** Lifetime of the access token the code grants. */
  token_ttl_ms: number;
  /** Set by the one exchange that used the code; null while unused. */
  used_at: number | null;
  /** Set when an operator revoked the link: its code cannot be exchanged, its session's token is refused. */
  revoked_at: number | null;
}

/** Tokens that verify but must be refused (migration 014, docs/tokens.md "Deactivation"). */
export interface TokenRevocationsTable {
  kind: 'account' | 'client' | 'console-link';
  /** The account id, the client's `client_id`, or the console link's id (`cln_…`). */
  subject_id: string;
  /** Every token of the subject is refused, for this reason; null when it is active. */
  refused: 'deactivated' | 'deleted' | 'revoked' | null;
  /** Tokens issued before this instant (epoch ms, a whole second) are refused: set at reactivation. */
  issued_before: number | null;
  changed_at: number;
  /** No token the row refuses can be valid after this: the row is deleted. Null while it holds. */
  expires_at: number | null;
}

/** A `rewards listen` session (migration 023): its account gets copies of its notifications while `expires_at` is ahead. */
export interface ListenSessionsTable {
  id: string;
  account_id: string;
  /** JSON array of the notification events it receives (`registered-requests`, `processed-requests`). */
  events: string;
  created_at: number;
  /** It receives nothing from this instant on; each poll moves it to a minute ahead. */
  expires_at: number;
}

/** The one row readiness writes to learn the database takes writes (id 1). */
interface ReadinessProbeTable {
  id: number;
  written_at: number;
}

/**
 * An endpoint's circuit breaker (an account's callback URL; migration 025, docs/delivery.md "Circuit
 * breaker"): a row only while the endpoint is failing, open, or draining what it held.
 */
export interface EndpointCircuitsTable {
  account_id: string;
  url: string;
  /** `failing`: answering badly, not yet open; `open`: new notifications are held and probes test it; `draining`: closed again, its held notifications being released. */
  state: 'failing' | 'open' | 'draining';
  /** Attempts that got no answer or a 5xx in a row, the latest included. */
  failures: number;
  /** The latest such failure, as the delivery log says it. */
  reason: string | null;
  opened_at: number | null;
  closed_at: number | null;
  /** While open: when the next probe may start, the wait after it (doubled at each failed probe), and the probe in flight. */
  next_probe_at: number | null;
  probe_interval_ms: number | null;
  probe_id: string | null;
  probe_until: number | null;
  /** Probes that failed since it opened. */
  probes: number;
  updated_at: number;
}

export interface Database {
  accounts: AccountsTable;
  oauth_clients: OAuthClientsTable;
  signing_keys: SigningKeysTable;
  experiences: ExperiencesTable;
  prizes: PrizesTable;
  requests: RequestsTable;
  request_events: RequestEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  jobs: JobsTable;
  subscriptions: SubscriptionsTable;
  webhook_signing_secrets: WebhookSigningSecretsTable;
  notifications: NotificationsTable;
  endpoint_circuits: EndpointCircuitsTable;
  notification_attempts: NotificationAttemptsTable;
  subscription_stats: SubscriptionStatsTable;
  subscription_health: SubscriptionHealthTable;
  subscription_rate_windows: SubscriptionRateWindowsTable;
  console_links: ConsoleLinksTable;
  token_revocations: TokenRevocationsTable;
  readiness_probe: ReadinessProbeTable;
  listen_sessions: ListenSessionsTable;
}
