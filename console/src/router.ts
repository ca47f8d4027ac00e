// Client-side routes under /console/ (the server answers index.html for any of them), so every
// page has a URL that can be shared and reloaded.
import { Store } from './session';

const BASE = '/console';

export interface Location {
  path: string;
  query: URLSearchParams;
}

function read(): Location {
  const raw = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return { path: raw.replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) };
}

export const route = new Store<Location>(read());

export function href(path: string, query?: Record<string, string | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value) params.set(key, value);
  const search = params.toString();
  return `${BASE}${path === '/' ? '/' : path}${search ? `?${search}` : ''}`;
}

export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  route.value = read();
  if (!replace) window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => (route.value = read()));
// Same-origin links under /console/ are followed without a reload.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element | null)?.closest?.('a');
  if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
  const url = new URL(anchor.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(`${BASE}/`)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
