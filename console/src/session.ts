// Who is signed in. The token lives in memory and in sessionStorage (this tab only, gone when it
// closes), never in localStorage; signing out forgets it.
import { useEffect, useState } from 'preact/hooks';

export class Store<T> {
  private listeners = new Set<() => void>();
  constructor(private current: T) {}
  get value(): T {
    return this.current;
  }
  set value(next: T) {
    this.current = next;
    for (const listener of this.listeners) listener();
  }
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export function useStore<T>(store: Store<T>): T {
  const [, setTick] = useState(0);
  const value = store.value;
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setTick((n) => n + 1));
    // Effects run after paint: a change between the render and now (a 401 at start) is not missed.
    // `value` is the one this render showed, so each new value subscribes again and compares anew.
    if (store.value !== value) setTick((n) => n + 1);
    return unsubscribe;
  }, [store, value]);
  return value;
}

export interface Session {
  token: string;
  expiresAt: number;
  clientId: string;
  accountId: string;
  /** The account's name (GET /v2/me); absent in a session stored before the API said it. */
  accountName?: string;
  scopes: string[];
  /** How the token was obtained: shown in the header. */
  via: 'client' | 'link';
}

const KEY = 'rewards-console-session';
const ACTING_KEY = 'rewards-console-account';

const EXPIRED = 'Your session expired, sign in again.';
let expiredAtLoad = false;

function load(): Session | null {
  try {
    const text = sessionStorage.getItem(KEY);
    if (!text) return null;
    const value = JSON.parse(text) as Session;
    if (value.expiresAt > Date.now()) return value;
    sessionStorage.removeItem(KEY);
    expiredAtLoad = true;
    return null;
  } catch {
    return null;
  }
}

export const session = new Store<Session | null>(load());
/** The account an operator acts for (`?accountId=` on every call); null = the token's own. */
export const actingAccount = new Store<string | null>(session.value ? sessionStorage.getItem(ACTING_KEY) : null);
/** Why the user is on the sign-in page (an expired session). */
export const signInNotice = new Store<string | null>(expiredAtLoad ? EXPIRED : null);

let timer: ReturnType<typeof setTimeout> | undefined;
function arm(): void {
  clearTimeout(timer);
  const current = session.value;
  if (current) timer = setTimeout(() => expire(EXPIRED), Math.max(0, current.expiresAt - Date.now()));
}
arm();

export function signIn(value: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(value));
  signInNotice.value = null;
  session.value = value;
  arm();
}

export function signOut(): void {
  clearTimeout(timer);
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(ACTING_KEY);
  actingAccount.value = null;
  session.value = null;
}

export function expire(message: string): void {
  signOut();
  signInNotice.value = message;
}

export function actFor(accountId: string | null): void {
  if (accountId) sessionStorage.setItem(ACTING_KEY, accountId);
  else sessionStorage.removeItem(ACTING_KEY);
  actingAccount.value = accountId;
}

/** `admin` implies every scope (src/domain/tokens/scopes.ts). */
export function can(scope: string): boolean {
  const scopes = session.value?.scopes ?? [];
  return scopes.includes(scope) || scopes.includes('admin');
}

export function isOperator(): boolean {
  return session.value?.scopes.includes('admin') ?? false;
}
