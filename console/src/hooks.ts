import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure, get } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * GETs `path` (null: nothing yet) and keeps the answer. `poll(data)` returns how long to wait before
 * reading again (live pages: a pending asset turns minted, a deploying collection turns deployed), or
 * false. Polling pauses while the tab is hidden; the previous answer stays shown while a new one loads.
 */
export function useApi<T>(path: string | null, poll?: (data: T | undefined) => number | false): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiFailure | undefined>(undefined);
  const [loading, setLoading] = useState(path !== null);
  const [tick, setTick] = useState(0);
  const pollRef = useRef(poll);
  pollRef.current = poll;
  const lastPath = useRef<string | null>(null);

  useEffect(() => {
    if (path === null) return;
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (lastPath.current !== path) {
      lastPath.current = path;
      setData(undefined);
    }
    const load = async () => {
      setLoading(true);
      let next: T | undefined;
      try {
        next = await get<T>(path);
        if (!alive) return;
        setData(next);
        setError(undefined);
      } catch (err) {
        if (!alive) return;
        setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: 'error', message: String(err) }]));
      } finally {
        if (alive) setLoading(false);
      }
      const wait = pollRef.current?.(next);
      if (alive && wait) schedule(wait);
    };
    const schedule = (ms: number) => {
      timer = setTimeout(() => {
        if (document.hidden) {
          const onShow = () => {
            document.removeEventListener('visibilitychange', onShow);
            if (alive) void load();
          };
          document.addEventListener('visibilitychange', onShow);
        } else void load();
      }, ms);
    };
    void load();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [path, tick]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

/** Moves focus to the page's heading when the page changes, so screen readers announce it. */
export function useFocusHeading(key: string) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus({ preventScroll: true });
  }, [key]);
  return ref;
}
