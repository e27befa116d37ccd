/**
 * Sets `key` in `map` and returns `value`; once the map holds `max` entries, its oldest goes first. A
 * Map iterates in insertion order, so the first key is the one set longest ago: a cache bounded by
 * count, with no bookkeeping of its own. (Setting an existing key keeps its place; delete it first to
 * count it as new.)
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): V {
  if (map.size >= max && !map.has(key)) map.delete(map.keys().next().value as K);
  map.set(key, value);
  return value;
}
