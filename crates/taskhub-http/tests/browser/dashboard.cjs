// Drives the dashboard in headless Chromium (playwright-core, the system browser).
// Run by tests/browser.rs, which starts the server and the instances this script expects:
//   BASE_URL, OUT_DIR, TASKHUB_CHROMIUM, TASKHUB_PLAYWRIGHT_DIR, XSS_ID, ENTITY_ID (state 5),
//   [TOKEN_URL, TOKEN],
//   [DOCS_SCREENSHOT]
'use strict';
const path = require('path');
const { chromium } = require(path.join(process.env.TASKHUB_PLAYWRIGHT_DIR, 'playwright-core'));

const base = process.env.BASE_URL;
const out = process.env.OUT_DIR;
const xssId = process.env.XSS_ID;
const entityId = process.env.ENTITY_ID;
const unexpectedDialogs = [];
// Answers for the dashboard's prompt()s, in order (a prompt with none left takes its default).
const promptAnswers = [];

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
  console.log('ok: ' + what);
}

async function shot(page, name) {
  const file = path.join(out, name);
  await page.screenshot({ path: file, fullPage: true });
  console.log('screenshot: ' + file);
}

// Rewind: no button unless Failed; on gated-1 (Failed on its `Gate` activity, whose gate the
// test opened since), Rewind with a reason: Running again, the history shows ExecutionRewound
// with the reason, the failure is gone; then `Go` completes it.
async function rewindSteps(page) {
  for (const other of ['wait-1', 'hello-1']) {
    await page.goto(base + '/#/instance/' + other);
    await page.waitForSelector('#action-restart');
    check(await page.locator('#action-rewind').count() === 0, 'no Rewind button on ' + other + ' (not Failed)');
  }
  await page.goto(base + '/#/instance/gated-1');
  await page.waitForSelector('#action-rewind');
  check((await page.getAttribute('#instance-status [data-status]', 'data-status')) === 'Failed', 'gated-1 is Failed, with a Rewind button');
  check((await page.textContent('#instance-failure')).includes('gate gated-1 is closed'), 'gated-1 shows its failure');
  promptAnswers.push('gate fixed from the dashboard');
  await page.click('#action-rewind');
  await page.waitForSelector('#instance-status [data-status="Running"]', { timeout: 30000 });
  check(true, 'gated-1 is Running after the rewind');
  await page.waitForFunction(() => [...document.querySelectorAll('#history-table tbody tr')]
    .some((r) => r.children[2].textContent === 'TaskCompleted' && r.children[3].textContent.includes('passed gated-1')), null, { timeout: 30000 });
  const rewound = await page.locator('#history-table tbody tr.rewound').evaluateAll((rows) => rows.map((r) => r.children[2].textContent + ' ' + r.children[3].textContent));
  check(rewound.length === 1 && rewound[0].startsWith('ExecutionRewound') && rewound[0].includes('gate fixed from the dashboard'),
    'the history shows the rewind with its reason: ' + rewound.join(' | '));
  const types = await page.locator('#history-table tbody tr').evaluateAll((rows) => rows.map((r) => r.children[2].textContent));
  check(!types.includes('TaskFailed') && !types.includes('ExecutionFailed'), 'the failure is gone from the history: ' + types.join(','));
  check((await page.textContent('#instance-failure')).trim() === '—', 'no failure is shown');
  await shot(page, 'rewound.png');
  promptAnswers.push('Go', 'null');
  await page.click('#action-raise-event');
  await page.waitForSelector('#instance-status [data-status="Completed"]', { timeout: 30000 });
  check((await page.textContent('#instance-output')).includes('Hello gated-1! passed gated-1'), 'gated-1 completed after the rewind, keeping its first activity');
  check(await page.locator('#action-rewind').count() === 0, 'no Rewind button once Completed');
}

async function main() {
  const browser = await chromium.launch({ executablePath: process.env.TASKHUB_CHROMIUM, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on('dialog', async (d) => {
    // confirm() and prompt() are the dashboard's; an alert() could only come from injected code.
    if (d.type() === 'alert') unexpectedDialogs.push(d.message());
    if (d.type() === 'prompt' && promptAnswers.length) await d.accept(promptAnswers.shift());
    else await d.accept();
  });
  page.on('pageerror', (e) => unexpectedDialogs.push('page error: ' + e.message));
  try {
    // The list.
    await page.goto(base + '/');
    await page.waitForSelector('#instances-table tbody tr[data-instance]');
    const all = await page.locator('#instances-table tbody tr[data-instance]').count();
    check(all >= 5, 'the list shows the instances (' + all + ')');
    check(await page.locator('#instances-table tbody tr[data-instance="' + entityId + '"]').count() === 0, 'the instance list leaves the entity out');
    await shot(page, 'list.png');

    // Filter by status.
    await page.selectOption('#filter-status', 'Running');
    await page.click('#apply-filters');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#instances-table tbody tr[data-instance]')];
      return rows.length > 0 && rows.every((r) => r.querySelector('[data-status]').dataset.status === 'Running');
    });
    const running = await page.locator('#instances-table tbody tr[data-instance]').evaluateAll((rows) => rows.map((r) => r.dataset.instance));
    check(running.includes('wait-1') && running.includes('wait-2') && !running.includes('parent-1'), 'the status filter keeps only Running instances: ' + running.join(','));
    await shot(page, 'filtered.png');

    // Sort by creation time: the server's order, across every page (newest, then oldest first).
    const listRequests = [];
    page.on('request', (r) => { if (r.url().includes('/api/instances?')) listRequests.push(r.url()); });
    const createdTimes = () => page.locator('#instances-table tbody tr[data-instance]').evaluateAll((rows) => rows.map((r) => r.children[3].textContent));
    await page.click('th[data-key="createdTime"]');
    await page.waitForSelector('th[data-key="createdTime"]:has-text("▼")');
    const newest = await createdTimes();
    check(newest.length > 1 && JSON.stringify(newest) === JSON.stringify([...newest].sort().reverse()), 'Created sorts newest first: ' + newest.join(','));
    check(listRequests.some((u) => u.includes('order=newest')), 'the order is asked of the server: ' + listRequests.join(' '));
    await page.click('th[data-key="createdTime"]');
    await page.waitForSelector('th[data-key="createdTime"]:has-text("▲")');
    const oldest = await createdTimes();
    check(JSON.stringify(oldest) === JSON.stringify([...oldest].sort()), 'a second click sorts oldest first: ' + oldest.join(','));
    await page.click('th[data-key="instanceId"]');
    await page.waitForSelector('th[data-key="instanceId"]:has-text("▲")');
    const byId = await page.locator('#instances-table tbody tr[data-instance]').evaluateAll((rows) => rows.map((r) => r.dataset.instance));
    check(JSON.stringify(byId) === JSON.stringify([...byId].sort()), 'Instance ID sorts by ID again');

    // Filter by prefix, open an instance, see its timeline.
    await page.selectOption('#filter-status', '');
    await page.fill('#filter-prefix', 'parent-');
    await page.click('#apply-filters');
    await page.waitForSelector('#instances-table tbody tr[data-instance="parent-1"]');
    await page.click('#instances-table tbody tr[data-instance="parent-1"] a.instance-link');
    await page.waitForSelector('#timeline');
    const kinds = await page.locator('#timeline g.item').evaluateAll((gs) => gs.map((g) => g.dataset.kind + ':' + g.dataset.status));
    check(kinds.includes('suborchestration:completed') && kinds.includes('timer:fired'), 'the timeline shows the sub-orchestration and the timer: ' + kinds.join(','));
    const child = await page.locator('#timeline a').first().getAttribute('href');
    check(child && child.startsWith('#/instance/'), 'the sub-orchestration bar links to the child');
    check(await page.locator('#history-table tbody tr').count() > 5, 'the history table is shown');
    await shot(page, 'instance.png');
    if (process.env.DOCS_SCREENSHOT) {
      await page.setViewportSize({ width: 1100, height: 760 });
      await page.screenshot({ path: process.env.DOCS_SCREENSHOT });
      console.log('docs screenshot: ' + process.env.DOCS_SCREENSHOT);
      await page.setViewportSize({ width: 1280, height: 860 });
    }
    // The child links back to its parent.
    await page.goto(base + '/' + child);
    await page.waitForSelector('#instance-id');
    check(await page.locator('dl.kv a.instance-link', { hasText: 'parent-1' }).count() === 1, 'the child page links to its parent');

    // An ID, custom status and output holding <script> are shown as text.
    await page.goto(base + '/#/instance/' + encodeURIComponent(xssId));
    await page.waitForSelector('#instance-output');
    check((await page.textContent('#instance-id')) === xssId, 'the ID is shown as text: ' + xssId);
    check(/<script>alert\(.*output.*<\/script>/.test(await page.textContent('#instance-output')), 'the output is shown as text');
    check(/<script>alert\(.*output.*<\/script>/.test(await page.textContent('#instance-custom-status')), 'the custom status is shown as text');
    check(await page.evaluate(() => document.querySelectorAll('script').length) === 1, 'no script element was injected');
    await page.fill('#filter-prefix', '').catch(() => {});
    await page.goto(base + '/');
    await page.fill('#filter-prefix', 'id-<');
    await page.click('#apply-filters');
    await page.waitForSelector('#instances-table tbody tr[data-instance] a.instance-link');
    // The rows from before the filter match the selector too: wait (bounded) for the filtered
    // list, then check it.
    await page.waitForFunction((id) => {
      const a = document.querySelector('#instances-table tbody a.instance-link');
      return a !== null && a.textContent === id;
    }, xssId, { timeout: 10000 }).catch(() => {});
    check((await page.textContent('#instances-table tbody a.instance-link')) === xssId, 'the list shows the ID as text');
    await shot(page, 'escaped.png');

    // Terminate one (confirmed) and see its status change.
    await page.goto(base + '/#/instance/wait-2');
    await page.waitForSelector('#action-terminate');
    check((await page.getAttribute('#instance-status [data-status]', 'data-status')) === 'Running', 'wait-2 is Running');
    await page.click('#action-terminate');
    await page.waitForSelector('#instance-status [data-status="Terminated"]', { timeout: 30000 });
    check(true, 'wait-2 shows Terminated after the confirmed terminate');
    await shot(page, 'terminated.png');
    await rewindSteps(page);

    // Partitions, workers and the live chart; dead letters.
    await page.goto(base + '/#/operations');
    await page.waitForSelector('#partitions-table tbody tr[data-partition]');
    await page.waitForSelector('#live-chart');
    check(await page.locator('#partitions-table tbody tr[data-partition]').count() === 4, 'four partitions are listed');
    // The server's SDK workers leave 2 orchestrations and 1 activity waiting for a worker whose
    // filters take them: shown under the partitions, and named in the scale recommendation.
    await page.waitForFunction(() => (document.querySelector('#unmatched') || {}).textContent);
    const unmatched = await page.locator('#unmatched').textContent();
    check(unmatched.includes('2 orchestration(s), 1 activity(ies), 0 entity batch(es)')
      && unmatched.includes('orchestration Unwanted × 2') && unmatched.includes('activity Charge (version 2) × 1')
      && unmatched.includes('none of the 1 connected SDK worker(s) takes them'), 'the work waiting for a matching SDK worker is shown: ' + unmatched);
    const scaleText = await page.locator('#scale').textContent();
    check(scaleText.includes('not for capacity') && !scaleText.includes('scale_in'), 'the scale recommendation says it waits for matching filters, not capacity: ' + scaleText);
    await shot(page, 'operations.png');
    await page.goto(base + '/#/dead-letters');
    await page.waitForSelector('#dead-letters-table tbody tr');
    await shot(page, 'dead-letters.png');

    // Entities: in the instance list only when asked for; the Entities view, its name filter,
    // one entity's state, and a confirmed signal changing it.
    await page.goto(base + '/');
    await page.check('#filter-entities');
    await page.click('#apply-filters');
    await page.waitForSelector('#instances-table tbody tr[data-instance="' + entityId + '"]');
    check(await page.getAttribute('#instances-table tbody tr[data-instance="' + entityId + '"] a', 'href') === '#/entity/' + encodeURIComponent(entityId),
      'with "Entities too" the instance list shows the entity, linked to its entity page');
    const entityRow = '#entities-table tbody tr[data-entity="' + entityId + '"]';
    await page.goto(base + '/#/entities');
    await page.waitForSelector(entityRow);
    check((await page.textContent(entityRow + ' td:nth-child(2)')).trim() === '5', 'the entity list shows the state');
    await page.fill('#entity-filter-name', 'Nobody');
    await page.click('#entity-apply-filters');
    await page.waitForSelector('#entities-table tbody td.muted');
    check(await page.locator(entityRow).count() === 0, 'the name filter leaves other names out');
    await page.fill('#entity-filter-name', 'Counter');
    await page.click('#entity-apply-filters');
    await page.waitForSelector(entityRow);
    await shot(page, 'entities.png');
    await page.click(entityRow + ' a.entity-link');
    await page.waitForSelector('#entity-state');
    check((await page.textContent('#entity-id')) === entityId, 'the entity page names the entity');
    check(JSON.parse(await page.textContent('#entity-state')) === 5, 'the entity page shows the state');
    check((await page.textContent('#entity-queued')) === '0' && (await page.textContent('#entity-locked-by')) === '—', 'no lock and no queued request');
    promptAnswers.push('add', '2');
    await page.click('#entity-action-signal');
    await page.waitForFunction(() => {
      const p = document.getElementById('entity-state');
      return p && p.textContent.trim() === '7';
    }, null, { timeout: 30000 });
    check(true, 'a confirmed signal from the dashboard changes the state to 7');
    await shot(page, 'entity.png');

    // With a token, the dashboard asks for it and keeps it for the tab.
    if (process.env.TOKEN_URL) {
      const p2 = await browser.newPage();
      await p2.goto(process.env.TOKEN_URL + '/');
      await p2.waitForSelector('#token-form:not([hidden])');
      await shot(p2, 'token.png');
      await p2.fill('#token-input', process.env.TOKEN);
      await p2.click('#token-submit');
      await p2.waitForSelector('#instances-table tbody tr');
      check(await p2.isHidden('#token-form'), 'after the token the dashboard loads');
      await p2.reload();
      await p2.waitForSelector('#instances-table tbody tr');
      check(await p2.isHidden('#token-form'), 'the token is kept in sessionStorage across reloads');
    }
    check(unexpectedDialogs.length === 0, 'no alert or page error: ' + unexpectedDialogs.join('; '));
  } catch (e) {
    await shot(page, 'failure.png').catch(() => {});
    throw e;
  } finally {
    await browser.close();
  }
}

main().then(() => console.log('browser test passed'), (e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
