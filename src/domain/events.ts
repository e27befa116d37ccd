// The events an App can receive by webhook (docs/api.md, Webhooks). Written by the use cases with the state change
// that causes them (services/events.ts) and delivered by the webhook dispatcher, which both need this.
export type EventType =
  | 'user.wallet_created'
  | 'user.wallet_exported'
  | 'asset.minted'
  | 'asset.mint_failed'
  | 'asset.edited'
  | 'asset.transferred'
  | 'asset.burned'
  | 'reward.allocated'
  | 'reward.claimed'
  | 'reward.withdrawn'
  | 'item.minted'
  | 'item.transferred'
  | 'item.burned';
