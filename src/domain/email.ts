// Emails are unique per App and looked up case-insensitively, but stored as given.
// The validator (zod's email format) admits ASCII only, so lower-casing is the whole comparison, and it
// is the same in JavaScript, SQLite and PostgreSQL. Migration 008 backfills with the same rule.
export function emailKey(email: string): string {
  return email.toLowerCase();
}
