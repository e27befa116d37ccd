// Job kinds that more than one module enqueues or handles, named once.

/** Mints an accepted asset (batched per collection into one chain transaction). */
export const MINT_JOB = 'asset.mint';
