// Taskhub dashboard: plain JS, no build step, nothing loaded from the internet.
// Every value from the API reaches the page through textContent or setAttribute on
// non-script attributes (never as markup), so IDs, outputs and statuses cannot inject HTML.
'use strict';

const DF = '/runtime/webhooks/durabletask';
const MOUNT = location.pathname.replace(/[^/]*$/, '');
const STATUSES = ['Pending', 'Running', 'Suspended', 'Completed', 'Failed', 'Terminated', 'ContinuedAsNew'];
const SVG = 'http://www.w3.org/2000/svg';

// ---------- DOM helpers ----------

/** An element with attributes (properties for `on*` handlers) and children (strings become text). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'value') e.value = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  append(e, children);
  return e;
}

function append(parent, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    parent.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function show(text, isError) {
  const m = document.getElementById('message');
  m.textContent = text;
  m.className = isError ? 'error' : '';
  m.hidden = !text;
}

function badge(status) {
  return el('span', { class: 'badge ' + (STATUSES.includes(status) ? status : ''), 'data-status': status }, status);
}

function json(v) {
  return v === undefined ? '' : JSON.stringify(v, null, 2);
}

function short(v, n) {
  const s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > n ? s.slice(0, n) + '…' : s;
}

function time(iso) {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
}

function age(ms) {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return Math.round(ms / 60000) + ' min';
}

function instanceLink(id) {
  return el('a', { href: '#/instance/' + encodeURIComponent(id), class: 'mono instance-link' }, id);
}

// ---------- API ----------

class NeedToken extends Error {}

async function api(method, path, body) {
  const headers = {};
  const token = sessionStorage.getItem('taskhub-token');
  if (token) headers['Authorization'] = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  // Paths are the router's; the page's directory is where the router is mounted ('/' or,
  // nested in the user's app, e.g. '/ops/').
  const res = await fetch(MOUNT + path.replace(/^\//, ''), { method, headers, body: body === undefined ? undefined : body });
  if (res.status === 401) {
    askToken();
    throw new NeedToken('a token is needed');
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (!res.ok && res.status !== 202) {
    const msg = data && data.error ? data.error : res.status + ' ' + res.statusText;
    const err = new Error(msg);
    err.status = res.status;
    throw err;
  }
  return { status: res.status, data, headers: res.headers };
}

function askToken() {
  const f = document.getElementById('token-form');
  f.hidden = false;
  document.getElementById('token-input').focus();
}

// ---------- router ----------

let timers = [];
function every(ms, fn) { timers.push(setInterval(fn, ms)); }
function stopTimers() { timers.forEach(clearInterval); timers = []; }

async function route() {
  stopTimers();
  show('');
  const hash = location.hash || '#/';
  for (const a of document.querySelectorAll('header nav a')) {
    a.classList.toggle('active', hash === a.getAttribute('href') || (a.id === 'nav-instances' && hash.startsWith('#/instance'))
      || (a.id === 'nav-entities' && hash.startsWith('#/entity/')));
  }
  const view = clear(document.getElementById('view'));
  try {
    if (hash.startsWith('#/instance/')) await instanceView(view, decodeURIComponent(hash.slice('#/instance/'.length)));
    else if (hash.startsWith('#/entity/')) await entityView(view, decodeURIComponent(hash.slice('#/entity/'.length)));
    else if (hash === '#/entities') await entitiesView(view);
    else if (hash === '#/operations') await operationsView(view);
    else if (hash === '#/dead-letters') await deadLettersView(view);
    else await listView(view);
  } catch (e) {
    if (!(e instanceof NeedToken)) show(e.message, true);
  }
}

// ---------- instance list ----------

// `order` is the server's: by instance ID, or by creation time (newest or oldest first).
const listState = { filters: {}, tokens: [null], page: 0, order: 'id', rows: [] };

async function listView(view) {
  const f = listState.filters;
  const status = el('select', { id: 'filter-status' }, el('option', { value: '' }, 'any status'),
    STATUSES.map((s) => el('option', { value: s }, s)));
  status.value = f.runtimeStatus || '';
  const name = el('input', { id: 'filter-name', placeholder: 'orchestration name', value: f.name || '' });
  const prefix = el('input', { id: 'filter-prefix', placeholder: 'instance ID prefix', value: f.instanceIdPrefix || '' });
  const from = el('input', { id: 'filter-from', type: 'datetime-local', value: f.from || '' });
  const to = el('input', { id: 'filter-to', type: 'datetime-local', value: f.to || '' });
  const size = el('select', { id: 'filter-top' }, ['20', '50', '100', '500'].map((n) => el('option', { value: n }, n)));
  size.value = f.top || '50';
  const withEntities = el('input', { id: 'filter-entities', type: 'checkbox' });
  withEntities.checked = !!f.includeEntities;
  const auto = el('input', { id: 'auto-refresh', type: 'checkbox' });
  auto.checked = !!listState.auto;
  const form = el('form', { class: 'filters', id: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    listState.filters = { runtimeStatus: status.value, name: name.value.trim(), instanceIdPrefix: prefix.value.trim(),
      from: from.value, to: to.value, top: size.value, includeEntities: withEntities.checked };
    listState.tokens = [null];
    listState.page = 0;
    loadPage();
  } },
  el('label', {}, 'Status', status), el('label', {}, 'Name', name), el('label', {}, 'ID prefix', prefix),
  el('label', {}, 'Created from (UTC)', from), el('label', {}, 'Created to (UTC)', to), el('label', {}, 'Page size', size),
  el('label', { title: 'Entities are instance rows too (@name@key); listed here only when asked' }, 'Entities too', withEntities),
  el('button', { type: 'submit', id: 'apply-filters' }, 'Apply'),
  el('label', {}, 'Auto-refresh', auto),
  el('button', { type: 'button', class: 'secondary', id: 'start-new', onclick: startDialog }, 'Start new…'));
  auto.addEventListener('change', () => { listState.auto = auto.checked; });
  const table = el('table', { id: 'instances-table' });
  const pager = el('div', { class: 'pager' },
    el('button', { type: 'button', class: 'secondary', id: 'first-page', onclick: () => { listState.page = 0; loadPage(); } }, 'First'),
    el('button', { type: 'button', class: 'secondary', id: 'prev-page', onclick: () => { if (listState.page > 0) { listState.page--; loadPage(); } } }, 'Previous'),
    el('span', { id: 'page-info', class: 'muted' }),
    el('button', { type: 'button', class: 'secondary', id: 'next-page', onclick: () => {
      if (listState.tokens[listState.page + 1]) { listState.page++; loadPage(); }
    } }, 'Next'));
  append(view, [el('h2', {}, 'Orchestration instances'), form, table, pager]);
  await loadPage();
  every(5000, () => { if (listState.auto) loadPage(); });
}

function toUtcIso(local) {
  return local ? local + (local.length === 16 ? ':00' : '') + 'Z' : '';
}

async function loadPage() {
  const f = listState.filters;
  const q = new URLSearchParams();
  if (f.runtimeStatus) q.set('runtimeStatus', f.runtimeStatus);
  if (f.name) q.set('name', f.name);
  if (f.instanceIdPrefix) q.set('instanceIdPrefix', f.instanceIdPrefix);
  if (f.from) q.set('createdTimeFrom', toUtcIso(f.from));
  if (f.to) q.set('createdTimeTo', toUtcIso(f.to));
  if (f.includeEntities) q.set('includeEntities', 'true');
  q.set('top', f.top || '50');
  if (listState.order !== 'id') q.set('order', listState.order);
  const token = listState.tokens[listState.page];
  if (token) q.set('continuationToken', token);
  let res;
  try {
    res = await api('GET', '/api/instances?' + q.toString());
  } catch (e) {
    if (!(e instanceof NeedToken)) show(e.message, true);
    return;
  }
  listState.rows = res.data.instances;
  listState.tokens[listState.page + 1] = res.data.continuationToken || null;
  listState.tokens.length = listState.page + 2;
  renderRows();
  const info = document.getElementById('page-info');
  if (info) info.textContent = 'page ' + (listState.page + 1) + ' · ' + listState.rows.length + ' instances' + (res.data.continuationToken ? ' · more…' : '');
  const next = document.getElementById('next-page');
  if (next) next.disabled = !res.data.continuationToken;
  const prev = document.getElementById('prev-page');
  if (prev) prev.disabled = listState.page === 0;
}

const COLUMNS = [
  ['instanceId', 'Instance ID'], ['name', 'Name'], ['runtimeStatus', 'Status'],
  ['createdTime', 'Created'], ['lastUpdatedTime', 'Last updated'], ['customStatus', 'Custom status'],
];

function renderRows() {
  const table = document.getElementById('instances-table');
  if (!table) return;
  clear(table);
  const rows = listState.rows;
  // Sorting is the server's, across every page: by instance ID, or by creation time (a click
  // on Created toggles newest and oldest first).
  const orders = { instanceId: () => 'id', createdTime: () => (listState.order === 'newest' ? 'oldest' : 'newest') };
  const marks = { id: ['instanceId', ' ▲'], newest: ['createdTime', ' ▼'], oldest: ['createdTime', ' ▲'] };
  const head = el('tr', {}, COLUMNS.map(([key, label]) => {
    if (!orders[key]) return el('th', {}, label);
    const [marked, arrow] = marks[listState.order];
    return el('th', { class: 'sortable', 'data-key': key, title: 'Sort every page by this column', onclick: () => {
      listState.order = orders[key]();
      listState.tokens = [null];
      listState.page = 0;
      loadPage();
    } }, label + (marked === key ? arrow : ''));
  }));
  append(table, [el('thead', {}, head)]);
  const body = el('tbody', {});
  if (rows.length === 0) append(body, [el('tr', {}, el('td', { colspan: COLUMNS.length, class: 'muted' }, 'No instances match.'))]);
  for (const r of rows) {
    // An entity's row (listed with "Entities too") links to its entity page.
    append(body, [el('tr', { 'data-instance': r.instanceId },
      el('td', {}, r.instanceId.startsWith('@') ? entityLink(r.instanceId) : instanceLink(r.instanceId)),
      el('td', {}, r.name),
      el('td', {}, badge(r.runtimeStatus)),
      el('td', { class: 'mono' }, time(r.createdTime)),
      el('td', { class: 'mono' }, time(r.lastUpdatedTime)),
      el('td', { class: 'clip mono' }, short(r.customStatus, 120)))]);
  }
  append(table, [body]);
}

async function startDialog() {
  const name = prompt('Orchestration name to start:');
  if (!name) return;
  const id = prompt('Instance ID (empty for a random one):', '') || '';
  const input = prompt('Input as JSON:', 'null');
  if (input === null) return;
  if (!confirm('Start ' + name + (id ? ' as ' + id : '') + '?')) return;
  try {
    const path = DF + '/orchestrators/' + encodeURIComponent(name) + (id ? '/' + encodeURIComponent(id) : '');
    const res = await api('POST', path, input);
    location.hash = '#/instance/' + encodeURIComponent(res.data.id);
  } catch (e) {
    if (!(e instanceof NeedToken)) show(e.message, true);
  }
}

// ---------- one instance ----------

async function instanceView(view, id) {
  const res = await api('GET', '/api/instances/' + encodeURIComponent(id));
  const d = res.data;
  const inst = d.instance;
  const base = DF + '/instances/' + encodeURIComponent(id);
  const action = (label, cls, run) => el('button', { type: 'button', class: cls, id: 'action-' + label.toLowerCase().replace(/ /g, '-'), onclick: async () => {
    try {
      const done = await run();
      if (done !== false) {
        show(label + ' requested for ' + id);
        setTimeout(route, 300);
      }
    } catch (e) {
      if (!(e instanceof NeedToken)) show(e.message, true);
    }
  } }, label);
  const active = ['Pending', 'Running', 'Suspended'].includes(inst.runtimeStatus);
  const actions = el('div', { class: 'actions' },
    active && action('Raise event', 'secondary', async () => {
      const name = prompt('Event name:');
      if (!name) return false;
      const data = prompt('Event data as JSON:', 'null');
      if (data === null || !confirm('Raise ' + name + ' on ' + id + '?')) return false;
      await api('POST', base + '/raiseEvent/' + encodeURIComponent(name), data);
    }),
    active && action('Terminate', 'danger', async () => {
      if (!confirm('Terminate ' + id + '?')) return false;
      await api('POST', base + '/terminate?reason=' + encodeURIComponent('terminated from the dashboard'));
    }),
    inst.runtimeStatus !== 'Suspended' && active && action('Suspend', 'secondary', async () => {
      if (!confirm('Suspend ' + id + '?')) return false;
      await api('POST', base + '/suspend?reason=' + encodeURIComponent('suspended from the dashboard'));
    }),
    inst.runtimeStatus === 'Suspended' && action('Resume', 'secondary', async () => {
      if (!confirm('Resume ' + id + '?')) return false;
      await api('POST', base + '/resume?reason=' + encodeURIComponent('resumed from the dashboard'));
    }),
    inst.runtimeStatus === 'Failed' && action('Rewind', 'secondary', () => rewindInstance(id, base)),
    action('Restart', 'secondary', async () => {
      if (!confirm('Restart ' + id + ' under the same ID with its original input?')) return false;
      await api('POST', base + '/restart?restartWithNewInstanceId=false');
    }),
    !active && action('Purge', 'danger', async () => {
      if (!confirm('Purge ' + id + ' (history and status, for good)?')) return false;
      await api('DELETE', base);
      location.hash = '#/';
      return false;
    }));
  const kv = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
  const details = el('dl', { class: 'kv' },
    kv('Name', inst.name + (inst.version ? ' v' + inst.version : '')),
    kv('Status', badge(inst.runtimeStatus)),
    kv('Execution', el('span', { class: 'mono' }, inst.executionId)),
    kv('Created', time(inst.createdTime)),
    kv('Last updated', time(inst.lastUpdatedTime)),
    kv('Completed', time(inst.completedTime)),
    kv('Partition', inst.partition),
    kv('Parent', d.parent ? instanceLink(d.parent.instanceId) : '—'),
    kv('Children', d.children.length ? d.children.map((c) => [instanceLink(c.instanceId), ' ']) : '—'),
    inst.suspendReason && kv('Suspended because', inst.suspendReason));
  const block = (title, value, pid) => el('div', {}, el('h3', {}, title), el('pre', { id: pid }, value === null || value === undefined ? '—' : json(value)));
  append(view, [
    el('h2', {}, 'Instance ', el('span', { class: 'mono', id: 'instance-id' }, inst.instanceId), ' ', el('span', { id: 'instance-status' }, badge(inst.runtimeStatus))),
    actions, details,
    el('div', { class: 'grid' },
      block('Input', inst.input, 'instance-input'),
      block('Output', inst.output, 'instance-output'),
      block('Custom status', inst.customStatus, 'instance-custom-status'),
      block('Failure', inst.failure, 'instance-failure')),
    el('h3', {}, 'Timeline'),
    timelineSvg(d.timeline, d.history),
    el('h3', {}, 'History'),
    historyTable(d.history)]);
  if (active) every(2000, async () => {
    try {
      const again = await api('GET', '/api/instances/' + encodeURIComponent(id));
      if (again.data.instance.runtimeStatus !== inst.runtimeStatus || again.data.history.length !== d.history.length) route();
    } catch (_) { /* shown on the next navigation */ }
  });
}

// Rewind (a Failed instance only): asks for a reason (optional; Cancel does nothing), then
// the instance runs again from where it failed, keeping what succeeded (docs/REWIND.md).
async function rewindInstance(id, base) {
  const reason = prompt('Rewind ' + id + ': it runs again from where it failed, keeping what succeeded.\nReason (optional):', '');
  if (reason === null) return false;
  await api('POST', base + '/rewind' + (reason ? '?reason=' + encodeURIComponent(reason) : ''));
}

function timelineSvg(items, history) {
  if (!items.length) return el('p', { class: 'muted', id: 'timeline-empty' }, 'No activities, timers or sub-orchestrations.');
  const t0 = Math.min(...items.map((i) => i.startMs), history.length ? Date.parse(history[0].time) : Infinity);
  const now = Date.now();
  const t1 = Math.max(...items.map((i) => i.endMs || Math.max(i.dueMs || 0, now)), t0 + 1);
  const label = 200, width = 1000, row = 22, top = 24;
  const height = top + items.length * row + 8;
  const x = (t) => label + ((t - t0) / (t1 - t0)) * (width - label - 10);
  const s = svg('svg', { class: 'timeline', id: 'timeline', viewBox: '0 0 ' + width + ' ' + height, role: 'img' });
  s.appendChild(svg('title', {}, 'Timeline of activities, timers and sub-orchestrations'));
  for (let k = 0; k <= 4; k++) {
    const t = t0 + ((t1 - t0) * k) / 4;
    s.appendChild(svg('line', { class: 'grid-line', x1: x(t), x2: x(t), y1: top - 4, y2: height }));
    s.appendChild(svg('text', { x: x(t), y: 14, 'text-anchor': k === 4 ? 'end' : 'start' }, '+' + age(Math.round(t - t0))));
  }
  items.forEach((it, i) => {
    const y = top + i * row;
    const end = it.endMs || (it.kind === 'timer' ? it.dueMs || now : now);
    const g = svg('g', { class: 'item item-' + it.kind, 'data-kind': it.kind, 'data-status': it.status });
    const name = (it.kind === 'suborchestration' ? '⤷ ' : '') + it.name + ' #' + it.taskId;
    g.appendChild(svg('text', { x: 4, y: y + 14 }, short(name, 30)));
    const rect = svg('rect', { class: 'bar-' + it.status + (it.kind === 'timer' ? ' bar-timer' : ''), x: x(it.startMs), y: y + 3,
      width: Math.max(2, x(end) - x(it.startMs)), height: row - 8, rx: 3 });
    rect.appendChild(svg('title', {}, name + ': ' + it.status + ', ' + age(end - it.startMs)));
    g.appendChild(rect);
    if (it.instanceId) {
      const a = svg('a', { href: '#/instance/' + encodeURIComponent(it.instanceId) });
      a.appendChild(g);
      s.appendChild(a);
    } else s.appendChild(g);
  });
  return s;
}

function historyTable(history) {
  return el('table', { id: 'history-table' },
    el('thead', {}, el('tr', {}, el('th', {}, '#'), el('th', {}, 'Time'), el('th', {}, 'Event'), el('th', {}, 'Details'))),
    el('tbody', {}, history.map((h) => el('tr', h.eventType === 'ExecutionRewound' ? { class: 'rewound' } : {},
      el('td', {}, h.seq), el('td', { class: 'mono' }, time(h.time)), el('td', {}, h.eventType),
      el('td', { class: 'clip mono', title: short(h.fields, 2000) }, short(h.fields, 200))))));
}

// ---------- entities ----------

function entityLink(id) {
  return el('a', { href: '#/entity/' + encodeURIComponent(id), class: 'mono entity-link' }, id);
}

const entityState = { name: '', stateless: false, top: '50', tokens: [null], page: 0 };

async function entitiesView(view) {
  const st = entityState;
  const name = el('input', { id: 'entity-filter-name', placeholder: 'entity name', value: st.name });
  const stateless = el('input', { id: 'entity-filter-stateless', type: 'checkbox' });
  stateless.checked = st.stateless;
  const size = el('select', { id: 'entity-filter-top' }, ['20', '50', '100', '500'].map((n) => el('option', { value: n }, n)));
  size.value = st.top;
  const table = el('table', { id: 'entities-table' });
  const info = el('span', { id: 'entity-page-info', class: 'muted' });
  const next = el('button', { type: 'button', class: 'secondary', id: 'entity-next-page', onclick: () => {
    if (st.tokens[st.page + 1]) { st.page++; load(); }
  } }, 'Next');
  const prev = el('button', { type: 'button', class: 'secondary', id: 'entity-prev-page', onclick: () => {
    if (st.page > 0) { st.page--; load(); }
  } }, 'Previous');
  const form = el('form', { class: 'filters', id: 'entity-filters', onsubmit: (ev) => {
    ev.preventDefault();
    st.name = name.value.trim();
    st.stateless = stateless.checked;
    st.top = size.value;
    st.tokens = [null];
    st.page = 0;
    load();
  } },
  el('label', {}, 'Name', name), el('label', {}, 'Without state too', stateless), el('label', {}, 'Page size', size),
  el('button', { type: 'submit', id: 'entity-apply-filters' }, 'Apply'),
  el('button', { type: 'button', class: 'danger', id: 'entity-clean', onclick: cleanEntities }, 'Clean up…'));
  append(view, [el('h2', {}, 'Entities'), form, table, el('div', { class: 'pager' }, prev, info, next)]);
  async function load() {
    const q = new URLSearchParams({ top: st.top });
    if (st.name) q.set('name', st.name);
    if (st.stateless) q.set('includeStateless', 'true');
    if (st.tokens[st.page]) q.set('continuationToken', st.tokens[st.page]);
    const d = (await api('GET', '/api/entities?' + q.toString())).data;
    st.tokens[st.page + 1] = d.continuationToken || null;
    st.tokens.length = st.page + 2;
    clear(table);
    append(table, [el('thead', {}, el('tr', {}, ['Entity ID', 'State', 'Last modified', 'Locked by', 'Queued'].map((h) => el('th', {}, h))))]);
    append(table, [el('tbody', {}, d.entities.length ? d.entities.map((e) => el('tr', { 'data-entity': e.entityId },
      el('td', {}, entityLink(e.entityId)),
      el('td', { class: 'clip mono' }, e.hasState ? short(e.state, 120) : '—'),
      el('td', { class: 'mono' }, time(e.lastModifiedTime)),
      el('td', {}, e.lockedBy ? instanceLink(e.lockedBy) : '—'),
      el('td', {}, e.queued)))
      : el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No entities match.')))]);
    info.textContent = 'page ' + (st.page + 1) + ' · ' + d.entities.length + ' entities' + (d.continuationToken ? ' · more…' : '');
    next.disabled = !d.continuationToken;
    prev.disabled = st.page === 0;
  }
  await load();
}

async function cleanEntities() {
  const idle = prompt('Remove empty entities unchanged for at least this many seconds (orphaned locks are released too):', '300');
  if (idle === null) return;
  if (!confirm('Clean up entities idle for ' + idle + ' s?')) return;
  try {
    const r = (await api('POST', '/api/entities/clean', JSON.stringify({ minIdleSeconds: Number(idle) }))).data;
    show('Removed ' + r.removed + ' empty entities, released ' + r.locksReleased + ' orphaned locks');
    setTimeout(route, 300);
  } catch (e) {
    if (!(e instanceof NeedToken)) show(e.message, true);
  }
}

async function entityView(view, id) {
  const e = (await api('GET', '/api/entities/' + encodeURIComponent(id))).data;
  const base = '/api/entities/' + encodeURIComponent(id);
  const action = (label, cls, run) => el('button', { type: 'button', class: cls, id: 'entity-action-' + label.toLowerCase().replace(/ /g, '-'), onclick: async () => {
    try {
      if (await run() !== false) {
        show(label + ' requested for ' + id);
        setTimeout(route, 300);
      }
    } catch (err) {
      if (!(err instanceof NeedToken)) show(err.message, true);
    }
  } }, label);
  const actions = el('div', { class: 'actions' },
    action('Signal', 'secondary', async () => {
      const op = prompt('Operation name:');
      if (!op) return false;
      const input = prompt('Input as JSON:', 'null');
      if (input === null || !confirm('Signal ' + op + ' on ' + id + '?')) return false;
      await api('POST', base + '/signal?op=' + encodeURIComponent(op), input);
    }),
    e.hasState && action('Delete state', 'danger', async () => {
      if (!confirm('Delete the state of ' + id + ' (after the requests sent before)?')) return false;
      await api('DELETE', base);
    }));
  const kv = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
  append(view, [
    el('h2', {}, 'Entity ', el('span', { class: 'mono', id: 'entity-id' }, e.entityId)),
    actions,
    el('dl', { class: 'kv' },
      kv('Name', e.name), kv('Key', el('span', { class: 'mono' }, e.key)),
      kv('Last modified', time(e.lastModifiedTime)),
      kv('Locked by', el('span', { id: 'entity-locked-by' }, e.lockedBy ? instanceLink(e.lockedBy) : '—')),
      kv('Queued requests', el('span', { id: 'entity-queued' }, e.queued))),
    el('h3', {}, 'State'),
    el('pre', { id: 'entity-state' }, e.hasState ? json(e.state) : '— (no state)')]);
  every(2000, async () => {
    try {
      const again = (await api('GET', base)).data;
      if (again.lastModifiedTime !== e.lastModifiedTime || again.queued !== e.queued || again.lockedBy !== e.lockedBy) route();
    } catch (_) { /* shown on the next navigation */ }
  });
}

// ---------- partitions, workers, chart ----------

async function operationsView(view) {
  const parts = el('table', { id: 'partitions-table' });
  const workers = el('table', { id: 'workers-table' });
  const scale = el('p', { id: 'scale', class: 'muted' });
  const unmatched = el('p', { id: 'unmatched' });
  const chart = el('div', { id: 'chart' });
  append(view, [el('h2', {}, 'Partitions'), parts, unmatched, el('h3', {}, 'Workers'), workers,
    el('h3', {}, 'Scale recommendation'), scale,
    el('h3', {}, 'Live: ', el('span', { class: 'legend-depth' }, 'queue depth'), ' and ', el('span', { class: 'legend-rate' }, 'throughput (orchestration turns per second, all workers, over 20 s)')),
    chart]);
  const act = (label, path, what) => el('button', { type: 'button', class: 'secondary', onclick: async () => {
    if (!confirm(what + '?')) return;
    try { await api('POST', path); show(what + ': done'); refresh(); } catch (e) { if (!(e instanceof NeedToken)) show(e.message, true); }
  } }, label);
  async function refresh() {
    const p = (await api('GET', '/api/partitions')).data;
    clear(parts);
    append(parts, [el('thead', {}, el('tr', {}, ['Partition', 'Owner', 'Next owner', 'Epoch', 'State', 'Queue', 'Oldest message', 'Lease age', ''].map((h) => el('th', {}, h))))]);
    append(parts, [el('tbody', {}, p.map((r) => el('tr', { 'data-partition': r.partition },
      el('td', {}, r.partition), el('td', { class: 'mono' }, r.owner || '—'), el('td', { class: 'mono' }, r.nextOwner || '—'),
      el('td', {}, r.epoch), el('td', {}, r.state), el('td', {}, r.queueLength), el('td', {}, age(r.oldestMessageAgeMs)),
      el('td', {}, age(r.leaseAgeMs)),
      el('td', {}, act('Bump', '/api/partitions/' + r.partition + '/bump', 'Bump partition ' + r.partition),
        r.state === 'offline' ? act('Online', '/api/partitions/' + r.partition + '/online', 'Bring partition ' + r.partition + ' online')
          : act('Offline', '/api/partitions/' + r.partition + '/offline', 'Take partition ' + r.partition + ' offline')))))]);
    const w = (await api('GET', '/api/workers')).data;
    clear(workers);
    append(workers, [el('thead', {}, el('tr', {}, ['Worker', 'Partitions', 'Barred', ''].map((h) => el('th', {}, h))))]);
    append(workers, [el('tbody', {}, w.workers.length ? w.workers.map((r) => el('tr', {},
      el('td', { class: 'mono' }, r.name), el('td', {}, r.partitions.join(', ')), el('td', {}, r.prohibited ? 'yes' : 'no'),
      el('td', {}, r.prohibited ? act('Allow', '/api/workers/' + encodeURIComponent(r.name) + '/allow', 'Allow ' + r.name)
        : act('Prohibit', '/api/workers/' + encodeURIComponent(r.name) + '/prohibit', 'Bar ' + r.name + ' from holding partitions'))))
      : el('tr', {}, el('td', { colspan: 4, class: 'muted' }, 'No worker holds a partition.')))]);
    const sc = (await api('GET', '/api/scale')).data;
    scale.textContent = 'Recommended workers: ' + sc.recommended_workers + ' (now ' + sc.current_workers + ', ' + sc.action + ') — ' + sc.reason;
    showUnmatched(unmatched, sc.unmatched);
  }
  await refresh();
  const samples = [];
  async function sample() {
    const s = (await api('GET', '/api/stats')).data;
    // Workers add their turns to the partition rows at each lease renewal (every 10 s by
    // default): the rate is taken over the last 20 s so those steps average out.
    const base = samples.find((p) => s.timeMs - p.t <= 20000);
    let rate = null;
    if (base && s.timeMs > base.t) rate = Math.max(0, s.turns - base.turns) / ((s.timeMs - base.t) / 1000);
    samples.push({ t: s.timeMs, depth: s.controlQueueLength + s.workItemQueueLength, rate, turns: s.turns });
    if (samples.length > 60) samples.shift();
    drawChart(chart, samples);
  }
  await sample();
  every(2000, () => sample().catch(() => {}));
  every(10000, () => refresh().catch(() => {}));
}

// The work the SDK workers served here leave waiting because none of their work-item filters
// take it (null: this process serves no SDK workers, so nothing is shown).
function showUnmatched(holder, u) {
  clear(holder);
  if (!u) return;
  const total = u.orchestrations + u.activities + u.entities;
  if (!total) {
    holder.className = 'muted';
    holder.textContent = 'No work waits for an SDK worker whose filters take it.';
    return;
  }
  holder.className = 'warn';
  const names = u.names.map((n) => n.kind + ' ' + n.name + (n.version ? ' (version ' + n.version + ')' : '') + ' × ' + n.items);
  if (u.omitted) names.push(u.omitted + ' more');
  holder.textContent = 'Waiting for an SDK worker whose filters take them (Pending, not failed): ' + u.orchestrations + ' orchestration(s), ' + u.activities + ' activity(ies), ' + u.entities + ' entity batch(es); ' +
    (u.workers ? 'none of the ' + u.workers + ' connected SDK worker(s) takes them' : 'no SDK worker is connected') + ' — ' + names.join(', ');
}

function drawChart(holder, samples) {
  clear(holder);
  const w = 1000, h = 180, pad = 30;
  const s = svg('svg', { class: 'chart', id: 'live-chart', viewBox: '0 0 ' + w + ' ' + h, role: 'img' });
  s.appendChild(svg('title', {}, 'Queue depth and throughput'));
  const maxDepth = Math.max(1, ...samples.map((p) => p.depth));
  const rates = samples.map((p) => p.rate).filter((r) => r !== null);
  const maxRate = Math.max(1, ...rates);
  const x = (i) => pad + (i / 59) * (w - 2 * pad);
  s.appendChild(svg('line', { class: 'axis', x1: pad, x2: w - pad, y1: h - pad, y2: h - pad }));
  s.appendChild(svg('text', { x: 4, y: 14 }, 'depth ≤ ' + maxDepth));
  s.appendChild(svg('text', { x: w - 4, y: 14, 'text-anchor': 'end' }, rates.length ? 'rate ≤ ' + maxRate.toFixed(1) + '/s' : 'rate: after the next sample'));
  const line = (vals, max, cls) => {
    const pts = vals.map((v, i) => (v === null ? null : x(i) + ',' + (h - pad - (v / max) * (h - 2 * pad)))).filter(Boolean);
    if (pts.length) s.appendChild(svg('polyline', { class: cls, points: pts.join(' ') }));
  };
  line(samples.map((p) => p.depth), maxDepth, 'line-depth');
  line(samples.map((p) => p.rate), maxRate, 'line-rate');
  holder.appendChild(s);
}

// ---------- dead letters ----------

async function deadLettersView(view) {
  const table = el('table', { id: 'dead-letters-table' });
  const pages = [null];
  let page = 0;
  const next = el('button', { type: 'button', class: 'secondary', id: 'dl-next', onclick: () => { page++; load(); } }, 'Next');
  const first = el('button', { type: 'button', class: 'secondary', onclick: () => { page = 0; load(); } }, 'First');
  append(view, [el('h2', {}, 'Dead letters'), el('p', { class: 'muted' }, 'Messages that failed on every delivery, oldest first. Replay puts one back into its queue.'),
    table, el('div', { class: 'pager' }, first, next)]);
  async function load() {
    const q = new URLSearchParams({ top: '50' });
    if (pages[page]) q.set('after', pages[page]);
    const letters = (await api('GET', '/api/dead-letters?' + q.toString())).data;
    pages[page + 1] = letters.length === 50 ? letters[letters.length - 1].id : null;
    next.disabled = !pages[page + 1];
    clear(table);
    append(table, [el('thead', {}, el('tr', {}, ['ID', 'Queue', 'Reason', 'Deliveries', 'Dead-lettered', 'Message', ''].map((h) => el('th', {}, h))))]);
    append(table, [el('tbody', {}, letters.length ? letters.map((l) => el('tr', { 'data-letter': l.id },
      el('td', { class: 'mono' }, l.id), el('td', {}, l.queue), el('td', { class: 'clip' }, l.reason), el('td', {}, l.dequeueCount),
      el('td', { class: 'mono' }, time(l.deadLetteredTime)), el('td', { class: 'clip mono', title: short(l.body, 2000) }, short(l.body, 160)),
      el('td', {}, el('button', { type: 'button', class: 'secondary', onclick: async () => {
        if (!confirm('Replay dead letter ' + l.id + ' into ' + l.queue + '?')) return;
        try { await api('POST', '/api/dead-letters/' + encodeURIComponent(l.id) + '/replay'); show('Replayed ' + l.id); load(); } catch (e) { if (!(e instanceof NeedToken)) show(e.message, true); }
      } }, 'Replay'))))
      : el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'No dead letters.')))]);
  }
  await load();
}

// ---------- start ----------

async function hubName() {
  try {
    const h = (await api('GET', '/api/hub')).data;
    document.getElementById('hub-name').textContent = h.taskHub + ' · ' + h.backend + ' · ' + h.partitionCount + ' partitions' + (h.worker ? ' · worker here' : '');
  } catch (_) { /* asked for the token */ }
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem('taskhub-token', document.getElementById('token-input').value);
  document.getElementById('token-form').hidden = true;
  hubName();
  route();
});
window.addEventListener('hashchange', route);
hubName();
route();
