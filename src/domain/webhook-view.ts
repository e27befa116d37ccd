// How a webhook endpoint is shown (the management API, the CLI and the console): never its secret.
// Its own module, without imports, so the console's browser code can share it (src/services/console/types.ts).

export interface WebhookView {
  app_uid: string;
  url: string;
  enabled: boolean;
  disabled_reason: string | null;
  events: string[] | null;
  key_id: string;
  previous_key_id: string | null;
  previous_key_valid_until: string | null;
  created_at: string;
  updated_at: string;
}
