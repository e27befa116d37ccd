// Transfer, burn and edit of an asset (API.md #9-#15, §5), one module per use case under lifecycle/;
// transfers and burns are relayed together (lifecycle/relay.ts).
export { transferView, createTransfer, getTransfer, listTransfers } from './lifecycle/transfer.js';
export { burnView, createBurn, getBurn, listBurns } from './lifecycle/burn.js';
export { editAsset, editJobHandler, editOutcome } from './lifecycle/edit.js';
export { forwardJobHandler, forwardOutcome } from './lifecycle/relay.js';
