import { render } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { useStore, session, signOut, can, isOperator, actingAccount, actFor, type Session } from './session';
import { route, href } from './router';
import { SignIn, consumeLinkFragment } from './pages/sign-in';
import { Overview } from './pages/overview';
import { SubscriptionList, SubscriptionPage, NewSubscription } from './pages/subscriptions';
import { Deliveries, DeliveryPage } from './pages/deliveries';
import { RequestSearch, RequestTimeline } from './pages/requests';
import { Accounts, AccountPage, Experiences } from './pages/admin';
import { AccountSwitcher } from './pages/account-switcher';

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
    if (second === 'new') return <NewSubscription />;
    return second ? <SubscriptionPage id={second} /> : <SubscriptionList />;
  }
  if (first === 'deliveries' && can('subscriptions:read')) return second ? <DeliveryPage id={second} /> : <Deliveries />;
  if (first === 'requests' && can('requests:read')) return second ? <RequestTimeline id={second} /> : <RequestSearch />;
  if (first === 'admin' && isOperator()) {
    if (second === 'accounts') return third ? <AccountPage id={third} /> : <Accounts />;
    if (second === 'experiences') return <Experiences />;
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

function Shell({ current }: { current: Session }) {
  const { path } = useStore(route);
  const acting = useStore(actingAccount);
  const main = useRef<HTMLElement>(null);
  useEffect(() => {
    main.current?.focus({ preventScroll: true });
  }, [path]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Rewards console</span>
        <span class="who" data-testid="signed-in-as">
          {current.via === 'link' ? 'Console link' : current.clientId} · account <code>{acting ?? current.accountId}</code>
        </span>
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
      <main id="main" ref={main} tabIndex={-1}>
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
  };
  new MutationObserver(update).observe(root, { childList: true, subtree: true, characterData: true });
  update();
}

consumeLinkFragment();
// A link opened in a tab that already shows the console changes only the fragment: no reload.
window.addEventListener('hashchange', consumeLinkFragment);
const root = document.getElementById('app')!;
render(<App />, root);
titleFromHeading(root);
