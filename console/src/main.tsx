import { render, type ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { useStore, session, signOut, can, isOperator, actingAccount, actFor, type Session } from './session';
import { route, href } from './router';
import { SignIn, consumeLinkFragment } from './pages/sign-in';
import { Overview } from './pages/overview';
import { Deliveries, DeliveryPage } from './pages/deliveries';
import { RequestSearch, RequestTimeline } from './pages/requests';
import { AccountSwitcher } from './pages/account-switcher';
import { Loading, Problem, useAsync } from './ui';

type OperatorPages = typeof import('./pages/operator');
const operatorPages = () => import('./pages/operator');
type SubscriptionPages = typeof import('./pages/subscription-pages');
const subscriptionPages = () => import('./pages/subscription-pages');

/** A page of a chunk loaded on demand, rendered once the chunk is in (it is fetched once, then cached by the browser and the module map). */
function ChunkPage<T>({ load, render }: { load: () => Promise<T>; render: (pages: T) => ComponentChildren }) {
  const pages = useAsync(load, []);
  if (pages.data) return <>{render(pages.data)}</>;
  return pages.error ? <Problem problem={pages.error} /> : <Loading label="Loading the page…" />;
}

const OperatorPage = ({ render }: { render: (pages: OperatorPages) => ComponentChildren }) => <ChunkPage load={operatorPages} render={render} />;
const SubscriptionsPage = ({ render }: { render: (pages: SubscriptionPages) => ComponentChildren }) => <ChunkPage load={subscriptionPages} render={render} />;

interface NavItem {
  path: string;
  label: string;
  scope: string;
  testid: string;
}

const NAV: NavItem[] = [
  { path: '/', label: 'Overview', scope: 'subscriptions:read', testid: 'nav-overview' },
  { path: '/subscriptions', label: 'Subscriptions', scope: 'subscriptions:read', testid: 'nav-subscriptions' },
  { path: '/deliveries', label: 'Deliveries', scope: 'subscriptions:read', testid: 'nav-deliveries' },
  { path: '/requests', label: 'Requests', scope: 'requests:read', testid: 'nav-requests' },
  { path: '/admin/accounts', label: 'Accounts', scope: 'admin', testid: 'nav-accounts' },
  { path: '/admin/experiences', label: 'Experiences', scope: 'admin', testid: 'nav-experiences' },
];

function active(item: NavItem, path: string): boolean {
  return item.path === '/' ? path === '/' : path === item.path || path.startsWith(`${item.path}/`);
}

function Page({ path }: { path: string }) {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const [first, second, third] = parts;
  if (!first) return can('subscriptions:read') ? <Overview /> : <Forbidden />;
  if (first === 'subscriptions' && can('subscriptions:read')) {
    return <SubscriptionsPage render={(p) => (second === 'new' ? <p.NewSubscription /> : second ? <p.SubscriptionPage id={second} /> : <p.SubscriptionList />)} />;
  }
  if (first === 'deliveries' && can('subscriptions:read')) return second ? <DeliveryPage id={second} /> : <Deliveries />;
  if (first === 'requests' && can('requests:read')) return second ? <RequestTimeline id={second} /> : <RequestSearch />;
  if (first === 'admin' && isOperator()) {
    if (second === 'accounts') return <OperatorPage render={(p) => (third ? <p.AccountPage id={third} /> : <p.Accounts />)} />;
    if (second === 'experiences') return <OperatorPage render={(p) => (third ? <p.ExperiencePage id={third === 'new' ? undefined : third} /> : <p.Experiences />)} />;
  }
  if (['subscriptions', 'deliveries', 'requests', 'admin'].includes(first)) return <Forbidden />;
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. <a href={href('/')}>Go to the overview</a>.
      </p>
    </section>
  );
}

function Forbidden() {
  return (
    <section>
      <h1>Not available</h1>
      <p>This session's scopes do not allow this page.</p>
    </section>
  );
}

/**
 * Who is signed in, by name: the account's name, then (on a wide screen) the client or console link
 * and the account's id; every id is in the tooltip. An operator acting for another account sees
 * that account's name in the "Acting for" select beside it.
 */
function Who({ current }: { current: Session }) {
  const client = current.via === 'link' ? 'console link' : `client ${current.clientId}`;
  const ids = `account ${current.accountId} · ${client}`;
  return (
    <span class="who" data-testid="signed-in-as" title={ids}>
      <strong class="who-name" data-testid="who-account">
        {current.accountName ?? current.accountId}
      </strong>
      <span class="who-ids wide-only" data-testid="signed-in-ids">
        {ids}
      </span>
    </span>
  );
}

function Shell({ current }: { current: Session }) {
  const { path } = useStore(route);
  const acting = useStore(actingAccount);
  // Focus follows the reader: on arrival it is at the top of the document, as on any page load, so
  // Tab reaches the skip link, then the menu, then the content. After a move within the console
  // it goes back to the top, on the page's name (read out by screen readers), not into the content.
  const top = useRef<HTMLParagraphElement>(null);
  const arrived = useRef(false);
  useEffect(() => {
    if (!arrived.current) {
      arrived.current = true;
      return;
    }
    top.current?.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }, [path]);
  return (
    <>
      {/* Its text is the tab's title, kept by titleFromHeading. */}
      <p class="sr-only" id="page-name" tabIndex={-1} ref={top} data-testid="page-name" />
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">
          Rewards<span class="wide-only"> console</span>
        </span>
        <Who current={current} />
        {isOperator() ? <AccountSwitcher acting={acting} onChange={actFor} own={current.accountId} /> : null}
        <button type="button" class="secondary" data-testid="sign-out" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <nav aria-label="Console">
        <ul>
          {NAV.filter((item) => can(item.scope)).map((item) => (
            <li key={item.path}>
              <a href={href(item.path)} data-testid={item.testid} aria-current={active(item, path) ? 'page' : undefined}>
                {item.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <Page key={`${path}|${acting ?? ''}`} path={path} />
      </main>
    </>
  );
}

function App() {
  const current = useStore(session);
  return current ? <Shell current={current} /> : <SignIn />;
}

/**
 * A tab (and a screen reader on arrival) says which page it shows: the page's heading, then the
 * console's name. It follows the heading, which some pages show only once their data is in.
 */
function titleFromHeading(root: HTMLElement): void {
  const update = () => {
    const heading = root.querySelector('h1')?.textContent?.trim();
    const title = heading ? `${heading} · Rewards console` : 'Rewards console';
    if (document.title !== title) document.title = title;
    const name = document.getElementById('page-name');
    if (name && name.textContent !== title) name.textContent = title;
  };
  new MutationObserver(update).observe(root, { childList: true, subtree: true, characterData: true });
  update();
}

/**
 * On a phone a table's rows stack as cards (styles.css) and each cell is headed by its column's
 * name, which CSS takes from the cell's `data-label`: set here from the table's `<th scope="col">`,
 * so no page has to repeat its headers in every cell.
 */
function labelCellsFromHeaders(root: HTMLElement): void {
  const update = () => {
    for (const table of root.querySelectorAll('table')) {
      const names = [...table.querySelectorAll('thead th')].map((th) => th.textContent?.trim() ?? '');
      for (const row of table.querySelectorAll('tbody tr')) {
        [...row.children].forEach((cell, i) => {
          const name = names[i];
          if (name && cell.getAttribute('data-label') !== name) cell.setAttribute('data-label', name);
        });
      }
    }
  };
  new MutationObserver(update).observe(root, { childList: true, subtree: true });
  update();
}

consumeLinkFragment();
// A link opened in a tab that already shows the console changes only the fragment: no reload.
window.addEventListener('hashchange', consumeLinkFragment);
const root = document.getElementById('app')!;
render(<App />, root);
titleFromHeading(root);
labelCellsFromHeaders(root);
