// Transfer, burn and edit of an asset (docs/api.md, Collections and assets; Transfers and burns): the requests and reads the routes call. One
// module per use case under lifecycle/; transfers and burns are relayed together (lifecycle/relay.ts),
// whose job and outcome the chain's work wires (services/chain/work.ts, outcome-handlers.ts).
export { transferView, createTransfer, getTransfer, listTransfers } from './transfer.js';
export { burnView, createBurn, getBurn, listBurns } from './burn.js';
export { editAsset } from './edit.js';
