import { sql } from 'kysely';

/** `handled = 0` as a literal: the planners then use the partial index of unhandled transactions. */
export const UNHANDLED = sql.lit(0);
