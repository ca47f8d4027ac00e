// Operator: the experiences (campaigns) of the account acted for, with their prizes and stock;
// created, edited and deleted here as with `rewards experiences import` or the API.
import { useState } from 'preact/hooks';
import { api, asPage, call, type Experience, type ExperienceBody } from '../api/client';
import { href, navigate, route } from '../router';
import { ActionForm, ConfirmButton, useAction } from '../actions';
import { Badge, Checkbox, Field, Loading, Problem, Select, useAsync } from '../ui';

/** GET /v2/admin/experiences (for the account acted for): experiences and their prizes with stock. */
export function Experiences() {
  const cursor = route.value.query.get('cursor') ?? '';
  const list = useAsync(async () => asPage<Experience>(await call(api.GET('/v2/admin/experiences', { params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } } }))), [cursor]);
  return (
    <section>
      <div class="title-row">
        <h1>Experiences</h1>
        <a class="button" href={href('/admin/experiences/new')} data-testid="new-experience">
          New experience
        </a>
      </div>
      <p class="lede">Of the account selected in "Acting for".</p>
      {list.loading ? <Loading label="Loading experiences…" /> : null}
      <Problem problem={list.error} />
      {list.data && list.data.data.length === 0 && !cursor ? (
        <div class="empty" data-testid="no-experiences">
          <p>
            <strong>No experiences yet.</strong> An experience is a campaign: a reward request names it, and its prizes are what the request can win.
          </p>
          <p>
            <a href={href('/admin/experiences/new')}>Create the first one</a>, or load many from a file with <code>rewards experiences import FILE</code>.
          </p>
        </div>
      ) : null}
      {list.data?.data.map((x) => (
        <section key={x.id} class="card" data-testid="experience">
          <h2>
            <a href={href(`/admin/experiences/${encodeURIComponent(x.id)}`)}>{x.title}</a> <code>{x.name}</code> {x.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>}
          </h2>
          <p>Events: {x.events.length ? x.events.join(', ') : 'any'}</p>
          {x.prizes.length === 0 ? (
            <p>No prizes: its requests win nothing.</p>
          ) : (
            <table>
              <caption class="sr-only">Prizes of {x.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Prize</th>
                  <th scope="col">Bucket</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Value</th>
                  <th scope="col">Quantity</th>
                  <th scope="col">Stock</th>
                </tr>
              </thead>
              <tbody>
                {x.prizes.map((p) => (
                  <tr key={p.id} data-testid="prize-row">
                    <td>
                      {p.title} <code>{p.id}</code>
                    </td>
                    <td>{p.bucket}</td>
                    <td>{p.kind}</td>
                    <td>{p.value}</td>
                    <td>{p.quantity}</td>
                    <td data-testid="stock">{p.stock === null ? 'unlimited' : p.stock}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      ))}
      <nav aria-label="Pages" class="pager">
        {cursor ? <a href={href('/admin/experiences')}>First page</a> : null}
        {list.data?.nextCursor ? <a href={href('/admin/experiences', { cursor: list.data.nextCursor })}>Next page</a> : null}
      </nav>
    </section>
  );
}

interface PrizeForm {
  id: string;
  bucket: string;
  title: string;
  description: string;
  value: string;
  quantity: string;
  kind: 'coupon' | 'payment' | 'physical';
  /** Empty: unlimited. */
  stock: string;
  /** The stock as loaded: an edit sends `stock` only when it was changed, so units taken meanwhile are not given back. */
  loadedStock?: string;
}

interface ExperienceForm {
  name: string;
  title: string;
  active: boolean;
  events: string;
  prizes: PrizeForm[];
}

const emptyPrize = (): PrizeForm => ({ id: '', bucket: '', title: '', description: '', value: '0', quantity: '1', kind: 'coupon', stock: '' });

function formOf(x?: Experience): ExperienceForm {
  return {
    name: x?.name ?? '',
    title: x?.title ?? '',
    active: x?.active ?? true,
    events: (x?.events ?? []).join(', '),
    prizes: (x?.prizes ?? []).map((p) => {
      const stock = p.stock === null ? '' : String(p.stock);
      return { id: p.id, bucket: p.bucket, title: p.title, description: p.description, value: String(p.value), quantity: String(p.quantity), kind: p.kind, stock, loadedStock: stock };
    }),
  };
}

function bodyOf(form: ExperienceForm): ExperienceBody {
  return {
    name: form.name.trim(),
    title: form.title.trim(),
    active: form.active,
    events: form.events
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean),
    prizes: form.prizes.map((p) => ({
      id: p.id.trim(),
      bucket: p.bucket.trim(),
      title: p.title.trim(),
      description: p.description,
      value: Number(p.value),
      quantity: Number(p.quantity),
      kind: p.kind,
      ...(p.loadedStock !== undefined && p.stock === p.loadedStock ? {} : { stock: p.stock.trim() === '' ? null : Number(p.stock) }),
    })),
  };
}

/** `/admin/experiences/new`: POST /v2/admin/experiences. `/admin/experiences/{id}`: GET, PUT, DELETE. */
export function ExperiencePage({ id }: { id?: string }) {
  const loaded = useAsync(async () => (id ? call(api.GET('/v2/admin/experiences/{id}', { params: { path: { id } } })) : undefined), [id]);
  if (id && loaded.loading && !loaded.data) return <Loading label="Loading the experience…" />;
  if (id && !loaded.data)
    return (
      <section>
        <h1>Experience</h1>
        <Problem problem={loaded.error} />
      </section>
    );
  return <ExperienceEditor key={loaded.data?.updatedAt ?? 'new'} experience={loaded.data} />;
}

function ExperienceEditor({ experience }: { experience?: Experience }) {
  const [form, setForm] = useState(() => formOf(experience));
  const save = useAction();
  const remove = useAction();
  const problem = save.problem;
  const field = (path: string) => problem?.field(path);
  const setPrize = (i: number, change: Partial<PrizeForm>) => setForm({ ...form, prizes: form.prizes.map((p, j) => (j === i ? { ...p, ...change } : p)) });
  const list = href('/admin/experiences');
  return (
    <section data-testid="experience-page">
      <p class="crumbs">
        <a href={list}>Experiences</a> /
      </p>
      <h1>{experience ? experience.title : 'New experience'}</h1>
      <ActionForm
        action={save}
        testid="experience-form"
        onRun={async () => {
          const body = bodyOf(form);
          if (experience) await call(api.PUT('/v2/admin/experiences/{id}', { params: { path: { id: experience.id } }, body }));
          else await call(api.POST('/v2/admin/experiences', { body }));
          navigate(list);
        }}
      >
        <Field
          label="Name"
          hint="what requests send as experience: letters, digits, - and _"
          value={form.name}
          onValue={(name) => setForm({ ...form, name })}
          required
          error={field('body.name')}
          data-testid="exp-name"
        />
        <Field label="Title" value={form.title} onValue={(title) => setForm({ ...form, title })} required error={field('body.title')} data-testid="exp-title" />
        <Field label="Events" hint="comma-separated; empty: any event" value={form.events} onValue={(events) => setForm({ ...form, events })} error={field('body.events')} data-testid="exp-events" />
        <Checkbox label="Active: requests naming it are accepted" checked={form.active} onChecked={(active) => setForm({ ...form, active })} data-testid="exp-active" />
        <fieldset data-testid="exp-prizes">
          <legend>Prizes</legend>
          {form.prizes.length === 0 ? <p class="hint">No prizes yet: add one, or its requests win nothing.</p> : null}
          {form.prizes.map((p, i) => (
            <fieldset key={i} class="prize" data-testid="prize-form">
              <legend>Prize {i + 1}</legend>
              <div class="row">
                <Field
                  label="Id"
                  hint="reported as rewardId"
                  value={p.id}
                  onValue={(v) => setPrize(i, { id: v })}
                  required
                  error={field(`body.prizes.${i}.id`) ?? field(`body.prizes[${i}].id`)}
                  data-testid="prize-id"
                />
                <Field label="Title" value={p.title} onValue={(v) => setPrize(i, { title: v })} required error={field(`body.prizes.${i}.title`)} data-testid="prize-title" />
                <Field
                  label="Bucket"
                  hint="the prize's name in notifications"
                  value={p.bucket}
                  onValue={(v) => setPrize(i, { bucket: v })}
                  required
                  error={field(`body.prizes.${i}.bucket`)}
                  data-testid="prize-bucket"
                />
              </div>
              <Field label="Description" value={p.description} onValue={(v) => setPrize(i, { description: v })} error={field(`body.prizes.${i}.description`)} data-testid="prize-description" />
              <div class="row">
                <Select
                  label="Kind"
                  value={p.kind}
                  onValue={(v) => setPrize(i, { kind: v as PrizeForm['kind'] })}
                  options={[
                    ['coupon', 'coupon'],
                    ['payment', 'payment'],
                    ['physical', 'physical'],
                  ]}
                  data-testid="prize-kind"
                />
                <Field label="Value" type="number" min={0} value={p.value} onValue={(v) => setPrize(i, { value: v })} required error={field(`body.prizes.${i}.value`)} data-testid="prize-value" />
                <Field
                  label="Quantity"
                  type="number"
                  min={1}
                  value={p.quantity}
                  onValue={(v) => setPrize(i, { quantity: v })}
                  required
                  error={field(`body.prizes.${i}.quantity`)}
                  data-testid="prize-quantity"
                />
                <Field
                  label="Stock"
                  hint="units left; empty: unlimited"
                  type="number"
                  min={0}
                  value={p.stock}
                  onValue={(v) => setPrize(i, { stock: v })}
                  error={field(`body.prizes.${i}.stock`)}
                  data-testid="prize-stock"
                />
              </div>
              <button type="button" class="danger" onClick={() => setForm({ ...form, prizes: form.prizes.filter((_, j) => j !== i) })} data-testid="remove-prize">
                Remove prize {i + 1}
              </button>
            </fieldset>
          ))}
          <button type="button" class="secondary" onClick={() => setForm({ ...form, prizes: [...form.prizes, emptyPrize()] })} data-testid="add-prize">
            Add a prize
          </button>
        </fieldset>
        <Problem problem={problem} unplaced={['body.name', 'body.title', 'body.events', 'body.prizes']} />
        <div class="actions">
          <button type="submit" disabled={save.busy} data-testid="exp-save">
            {experience ? 'Save' : 'Create experience'}
          </button>
          <a href={list}>Cancel</a>
        </div>
      </ActionForm>
      {experience ? (
        <section class="panel" aria-labelledby="delete-heading">
          <h2 id="delete-heading">Delete</h2>
          <p>An experience that requests have used cannot be deleted; switch it off instead (uncheck Active).</p>
          <ConfirmButton
            testid="delete-experience"
            question={`Delete ${experience.name} and its prizes?`}
            action={remove}
            onConfirm={async () => {
              await call(api.DELETE('/v2/admin/experiences/{id}', { params: { path: { id: experience.id } } }));
              navigate(list);
            }}
          >
            Delete experience
          </ConfirmButton>
          <Problem problem={remove.problem} />
        </section>
      ) : null}
    </section>
  );
}
