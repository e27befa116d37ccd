// Stackable items of ERC-1155 collections (docs/api.md, Items).
export { createItem, editItem, getItem, listItems, itemTokenMetadata } from './catalog.js';
export { mintItem, getItemMint, listItemMintsOfUser } from './mints.js';
export { startItemAction, getItemAction, listItemActions } from './actions.js';
export { getItemBalance, listItemBalances } from './balances.js';
