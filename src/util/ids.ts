import { randomInt, randomUUID } from 'node:crypto';

/** A 12-digit numeric uid as the hosted service issues them ("816379099131"); never starts with 0. */
export function newUid(): string {
  return String(randomInt(100_000_000_000, 1_000_000_000_000));
}

export const isUid = (s: string): boolean => /^[1-9][0-9]{11}$/.test(s);

export const newEventId = (): string => randomUUID();
