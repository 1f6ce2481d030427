/**
 * The inspector in a real browser (the Chromium of the npm package @sparticuz/chromium, or
 * CHROMIUM_PATH, driven by playwright-core; test/support/browser.ts), against the real stack: the list, a search, a lineage, a compaction with its
 * summary and the kept user request, live progress of a running compaction, 404s, and
 * input that never reaches SQL as text.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineageWorkflowId } from '../../src/workflows/contract';
import { startInspector, type RunningInspector } from '../../src/inspector/server';
import { launchBrowser } from '../support/browser';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();
let inspector: RunningInspector;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  inspector = await startInspector({ client: stack().reader, temporalUiUrl: 'http://127.0.0.1:8233', bindAddress: '127.0.0.1:0' });
  browser = await launchBrowser();
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await inspector?.close();
});

describe('the inspector', () => {
  it('lists, searches, opens a lineage and a compaction, and shows the summary and the kept user request', async () => {
    const id = uniqueId('insp');
    const other = uniqueId('other');
    await stack().client.createSession({ sessionId: id, source: 'discord' });
    await stack().client.createSession({ sessionId: other, source: 'slack' });
    const lastRequest = 'Finally: document the parser module and its error cases.';
    await stack().client.append(id, [...conversation(12), { role: 'user', content: lastRequest }]);
    stack().llm.setDefault({ text: 'SUMMARY-TEXT-9931: modules 0 to 9 were refactored.' });
    const compacted = await stack().client.compact(id, { requestId: 'req-inspector-1' });
    expect(compacted.outcome).toBe('compacted');

    // The list shows both lineages; a search narrows it to one.
    await page.goto(`${inspector.url}/`);
    await expect.poll(() => page.locator('#lineages').textContent()).toContain(id);
    expect(await page.locator('#lineages').textContent()).toContain(other);
    await page.fill('input[name=q]', id.slice(0, 10));
    await page.click('button[type=submit]');
    await page.waitForURL(/\?q=/);
    const rows = await page.locator('#lineages tbody tr').allTextContents();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(id);
    expect(rows[0]).toContain('compacted');
    // Filters by source and by last outcome.
    await page.goto(`${inspector.url}/?source=slack`);
    expect(await page.locator('#lineages tbody tr').allTextContents()).toEqual([expect.stringContaining(other)]);
    await page.goto(`${inspector.url}/?outcome=none&q=${encodeURIComponent(other)}`);
    expect(await page.locator('#lineages tbody tr').count()).toBe(1);
    await page.goto(`${inspector.url}/?outcome=compacted&q=${encodeURIComponent(other)}`);
    expect(await page.locator('#lineages tbody tr').count()).toBe(0);

    // The lineage: chain root to head, the compaction row, live state, the Web UI link.
    await page.goto(`${inspector.url}/?q=${encodeURIComponent(id)}`);
    await page.click(`a:text("${id}")`);
    await page.waitForURL(/\/lineages\//);
    expect(await page.locator('#chain li').allTextContents()).toEqual([expect.stringContaining(id), expect.stringContaining(`${id}--g1`)]);
    const compactionRow = await page.locator('#compactions tbody tr').first().textContent();
    expect(compactionRow).toContain('compacted');
    expect(compactionRow).toContain('req-inspector-1');
    expect(compactionRow).toContain('fake-model');
    // The gate verdicts and the summarised range recorded in the audit row.
    expect(compactionRow).toMatch(/providerValid: pass/);
    expect(compactionRow).toMatch(/latestUserRequest: pass/);
    expect(compactionRow).toMatch(/seq \d+–\d+/);
    expect(await page.getAttribute('#webui', 'href')).toBe(`http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(lineageWorkflowId(id))}`);
    await expect.poll(() => page.locator('#live').textContent(), { timeout: 20_000 }).toMatch(/last outcome compacted/);

    // The compaction: the summary, the kept user request side by side with the parent.
    await page.click('#compactions tbody tr a');
    await page.waitForURL(/\/compactions\//);
    expect(await page.locator('#summary').textContent()).toContain('SUMMARY-TEXT-9931');
    // The ledger the compaction committed, as JSON: the summarised requests, verbatim.
    const ledger = JSON.parse((await page.locator('#ledger').textContent()) ?? 'null') as { requests: Array<{ text: string }> };
    expect(ledger.requests.length).toBeGreaterThan(0);
    expect(ledger.requests.every((r) => /^Request \d+: please refactor module \d+;/.test(r.text))).toBe(true);
    const kept = page.locator('#result .kind-kept', { hasText: lastRequest });
    expect(await kept.count()).toBe(1);
    expect(await page.locator('#parent .fate-kept', { hasText: lastRequest }).count()).toBe(1);
    expect(await page.locator('#parent .fate-summarised').count()).toBeGreaterThan(0);
    const range = await page.locator('#range').textContent();
    expect(range).toMatch(/lineage seq \d+–\d+/);
    expect(range).not.toContain('inferred');
  });

  it('shows the progress of a running compaction, as the state query does', async () => {
    const id = uniqueId('live');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    stack().llm.script({ chunks: 40, chunkDelayMs: 150 });
    const pending = stack().client.compact(id);
    await page.goto(`${inspector.url}/lineages/${encodeURIComponent(id)}`);
    await expect.poll(() => page.locator('#live').textContent(), { timeout: 30_000, interval: 300 }).toMatch(/summarising/);
    expect(await page.locator('#live').textContent()).toMatch(/in flight: job/);
    expect((await pending).outcome).toBe('compacted');
  });

  it('answers unknown ids with a 404 page and never lets input reach SQL as text', async () => {
    for (const path of ['/lineages/no-such-lineage', '/compactions/no-such-compaction', '/nothing-here']) {
      const response = await page.goto(`${inspector.url}${path}`);
      expect(response?.status(), path).toBe(404);
      expect(await page.locator('h1').textContent()).toBe('Not found');
    }
    const injection = "x' or '1'='1";
    const response = await page.goto(`${inspector.url}/?q=${encodeURIComponent(injection)}`);
    expect(response?.status()).toBe(200);
    expect(await page.locator('#lineages tbody tr').count()).toBe(0);
    expect((await page.goto(`${inspector.url}/lineages/${encodeURIComponent("'; drop table lineages; --")}`))?.status()).toBe(404);
    // The table is still there and so are the lineages.
    expect((await stack().client.operator.listLineages({ limit: 200 })).lineages.length).toBeGreaterThan(0);
    expect((await page.goto(`${inspector.url}/?status=bogus`))?.status()).toBe(400);
  });
});
