// Transfer, burn and edit of an asset (docs/api.md, Collections and assets; Transfers and burns): the requests and reads the routes call. One
// module per use case under lifecycle/; transfers and burns are relayed together (lifecycle/relay.ts),
// whose job and outcome the chain's work wires (chain-work.ts, outcome-handlers.ts).
export { transferView, createTransfer, getTransfer, listTransfers } from './lifecycle/transfer.js';
export { burnView, createBurn, getBurn, listBurns } from './lifecycle/burn.js';
export { editAsset } from './lifecycle/edit.js';
