import { call, api, asPage, type Account } from '../api/client';
import { useAsync, useId } from '../ui';

/** The operator acts for any account (`?accountId=` on every call). One page of 200 accounts. */
export function AccountSwitcher({ acting, own, onChange }: { acting: string | null; own: string; onChange: (id: string | null) => void }) {
  const id = useId('acct');
  const accounts = useAsync(async () => asPage<Account>(await call(api.GET('/v2/admin/accounts', { params: { query: { limit: 200 } } }))), []);
  const list = accounts.data?.data ?? [];
  return (
    <div class="switcher">
      <label for={id}>Acting for</label>
      <select
        id={id}
        data-testid="account-switcher"
        value={acting ?? own}
        onChange={(e) => {
          const value = e.currentTarget.value;
          onChange(value === own ? null : value);
        }}
      >
        <option value={own}>Operator account</option>
        {acting && !list.some((a) => a.id === acting) ? <option value={acting}>{acting}</option> : null}
        {list
          .filter((a) => a.id !== own)
          .map((a) => (
            <option key={a.id} value={a.id}>
              {a.name}
              {a.active ? '' : ' (inactive)'}
            </option>
          ))}
      </select>
    </div>
  );
}
