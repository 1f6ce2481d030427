/**
 * The inspector: a small read-only web page for operators. Which compaction dropped
 * something, what was summarised into what, who triggered it, and is one running now.
 * Server-rendered HTML (Hono, its `html` template escapes every value), no front-end build;
 * one inline script refreshes the live panel. Reads Postgres for lineages and transcripts and
 * the workflow (state query, heartbeat progress) for live state. `npm run inspector` runs it
 * alone, `npm run dev` with the rest; it binds 127.0.0.1 unless INSPECTOR_BIND_ADDRESS says
 * otherwise. Transcripts hold whatever users said: bound to anything but loopback it requires
 * a token (INSPECTOR_AUTH_TOKEN, as a Basic password, which a browser asks for, or a Bearer
 * token) and refuses to start without one.
 *
 * Against a web page the operator visits (DNS rebinding, framing): every request's `Host` must
 * be a loopback name, the bound host or one of INSPECTOR_ALLOWED_HOSTS, else 421; every
 * response carries a Content-Security-Policy that runs only the page's own script and style
 * (by hash), forbids framing, and `nosniff` and `no-referrer` (docs/security.md).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { serve, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { Pool } from 'pg';
import { loadConfig } from '../config';
import type { CompactionDetail, CompactionView, LineageDetail, ListLineagesOptions, TranscriptRow } from '../db/lineage-queries';
import { LINEAGE_STATUSES, OUTCOMES } from '../db/lineage-queries';
import { CompactionNotFoundError, InvalidInputError, SessionNotFoundError } from '../errors';
import { parseWholeNumber } from '../client/numbers';
import { formatProgress } from '../client/progress';
import { SessionsClient } from '../client/sessions-client';
import type { OperatorClient } from '../client/operator-client';

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export interface InspectorOptions {
  client: SessionsClient;
  /** The Temporal Web UI's base URL, for links to a lineage's workflow. */
  temporalUiUrl: string;
  /** When set, every page needs it: the password of Basic auth (any user name) or a Bearer token. */
  authToken?: string;
  /** Host names answered besides loopback names (and, with startInspector, the bound host): INSPECTOR_ALLOWED_HOSTS. */
  allowedHosts?: string[];
  /**
   * Tenant mode (docs/security.md, "Tenants"): each tenant's token shows that tenant's lineages
   * only, read through `client`, which connects as a reader login mapped to the tenant, so the
   * database filters (row-level security), not the inspector. With tenants, every page needs a
   * token: a tenant's, or `authToken` (the operator's, every lineage, through `client` above).
   */
  tenants?: InspectorTenant[];
}

/** One tenant of an inspector in tenant mode: INSPECTOR_TENANTS and INSPECTOR_TENANT_<NAME>_* (src/config.ts). */
export interface InspectorTenant {
  name: string;
  token: string;
  client: SessionsClient;
}

/** Whether a host name is this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The token an Authorization header carries, as a Bearer token or a Basic password. */
function presentedToken(header: string | undefined): string | undefined {
  const [scheme, value = ''] = (header ?? '').split(' ', 2);
  if (/^bearer$/i.test(scheme)) return value;
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : undefined;
  }
  return undefined;
}

/** Whether a presented token is `token`, compared in constant time. */
function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), lower-case, without a trailing dot. */
export function hostName(header: string): string {
  const value = header.trim().toLowerCase();
  const name = value.startsWith('[') ? value.slice(1, value.indexOf(']')) : value.replace(/:\d*$/, '');
  return name.replace(/\.$/, '');
}

/**
 * Whether a request's Host header names this inspector: a loopback name, or one of `allowed`.
 * A page on another origin that resolves its own name to 127.0.0.1 (DNS rebinding) sends its
 * own name: refused, so it never reads a response.
 */
export function hostAllowed(header: string | undefined, allowed: readonly string[]): boolean {
  if (!header) return false;
  const name = hostName(header);
  return isLoopback(name) || allowed.includes(name);
}

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{background:#24292f;color:#fff;padding:.6em 1.2em}header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:1em 1.2em;max-width:1400px}
table{border-collapse:collapse;width:100%;background:#fff}th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
.outcome-compacted{color:#116329}.outcome-refused,.outcome-aborted{color:#a40e26}.outcome-stale{color:#7d4e00}.outcome-running{color:#0550ae}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.msg{border:1px solid #ddd;background:#fff;margin:.3em 0;padding:.3em .5em;white-space:pre-wrap;word-break:break-word}
.msg .meta{font-size:12px;color:#555}
.fate-summarised{background:#fff4e5}.fate-kept{background:#e6ffec}.fate-masked{background:#eeeeee}.fate-after-watermark{background:#e7f0ff}
.kind-summary{background:#fff4e5;border-color:#d4a72c}.kind-kept{background:#e6ffec}.kind-masked{background:#eeeeee}.kind-carried{background:#e7f0ff}
form.filters{display:flex;gap:.5em;flex-wrap:wrap;margin-bottom:1em}
.live{background:#fff;border:1px solid #ddd;padding:.5em 1em}
code{background:#f0f0f0;padding:0 .2em}
`;

/** The live panel's refresh: the page's only script, allowed by its hash (CONTENT_SECURITY_POLICY). */
const LIVE_SCRIPT = `
(function(){var el=document.getElementById('live');function load(){fetch(el.dataset.src).then(function(r){return r.text()}).then(function(t){el.innerHTML=t}).catch(function(){});}
load();setInterval(load,2000);})();
`;

const sha256 = (value: string) => `'sha256-${createHash('sha256').update(value, 'utf8').digest('base64')}'`;

/**
 * What every response may do in a browser: nothing by default; the page's one script and one
 * style element by hash (no other inline code runs, so injected markup cannot script); fetches
 * and form submissions to this origin only; never framed (clickjacking).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${sha256(LIVE_SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The headers on every response, error pages included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function page(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · session-compaction inspector</title><style>${raw(STYLE)}</style></head>
<body><header><a href="/">session-compaction inspector</a></header><main>${body}</main></body></html>`;
}

const time = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-');
const ms = (value: number | null | undefined) => (value == null ? '-' : value < 1000 ? `${value} ms` : `${(value / 1000).toFixed(1)} s`);
const n = (value: unknown) => (value == null ? '-' : String(value));
const lineageHref = (id: string) => `/lineages/${encodeURIComponent(id)}`;
const compactionHref = (id: string) => `/compactions/${encodeURIComponent(id)}`;

/** A message as a person reads it: its text when it is plain text, otherwise its JSON (every dialect, every field). */
function contentText(row: Pick<TranscriptRow, 'message'>): string {
  const { role: _role, name: _name, ...rest } = row.message;
  if (typeof rest.content === 'string' && Object.keys(rest).length === 1) return rest.content;
  return JSON.stringify(rest, null, 2);
}

function listPage(result: Awaited<ReturnType<OperatorClient['listLineages']>>, filters: ListLineagesOptions): Html {
  const query = (after: string) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries({ q: filters.search, source: filters.source, status: filters.status, outcome: filters.lastOutcome }))
      if (v) params.set(k, v);
    params.set('after', after);
    return `/?${params.toString()}`;
  };
  const option = (value: string, selected: string | undefined) =>
    html`<option value="${value}" ${value === selected ? 'selected' : ''}>${value || 'any'}</option>`;
  return page(
    'Lineages',
    html`<h1>Lineages</h1>
<form class="filters" method="get" action="/">
  <input name="q" placeholder="lineage or session id" value="${filters.search ?? ''}" aria-label="search">
  <input name="source" placeholder="source" value="${filters.source ?? ''}" aria-label="source">
  <select name="status" aria-label="status">${['', ...LINEAGE_STATUSES].map((s) => option(s, filters.status))}</select>
  <select name="outcome" aria-label="last outcome">${['', ...OUTCOMES].map((s) => option(s, filters.lastOutcome))}</select>
  <button type="submit">Search</button>
</form>
<table id="lineages"><thead><tr><th>lineage</th><th>head</th><th>source</th><th>mode</th><th>status</th><th>compactions</th><th>head tokens</th><th>last outcome</th><th>last compaction</th></tr></thead><tbody>
${result.lineages.map(
  (
    l,
  ) => html`<tr><td><a href="${lineageHref(l.lineageId)}">${l.lineageId}</a></td><td>${l.headSessionId}</td><td>${l.source ?? '-'}</td><td>${l.mode}</td><td>${l.closed ? 'closed' : 'live'}</td>
<td class="num">${l.generation}</td><td class="num">${l.headTokens}</td><td class="outcome-${l.lastOutcome ?? 'none'}">${l.lastOutcome ?? '-'}${l.lastReason ? html`: ${l.lastReason}` : ''}</td><td>${time(l.lastCompactionAt)}</td></tr>`,
)}
</tbody></table>
${result.lineages.length === 0 ? html`<p>No lineages match.</p>` : ''}
${result.next ? html`<p><a id="next" href="${query(result.next)}">next page</a></p>` : ''}`,
  );
}

function gateCell(c: CompactionView): Html {
  if (c.gateResults && typeof c.gateResults === 'object') {
    return html`${Object.entries(c.gateResults).map(([gate, result]) => html`<div>${gate}: ${typeof result === 'string' ? result : JSON.stringify(result)}</div>`)}${c.gate ? html`<div><strong>refused by ${c.gate}</strong></div>` : ''}`;
  }
  return html`${c.gate ? html`refused by ${c.gate}` : '-'}`;
}

/** What each rung that ran was billed, and the minimum-gain guard's figures (docs/compaction.md, "What a compaction costs"). */
function costLines(c: CompactionView): Html {
  const costs = Object.entries(c.costs ?? {});
  return html`${costs.length > 0 ? html`<p id="costs">billed: ${costs.map(([rung, k]) => html`${rung} ${k.inputTokens} in (${k.cacheReadTokens} cached, ${k.cacheWriteTokens} written), ${k.outputTokens} out, ${k.calls} call(s); `)}</p>` : ''}${
    c.gain
      ? html`<p id="gain">minimum gain over ${c.gain.turns} turn(s)${c.gain.estimated ? ' (estimated)' : ''}: saving ${c.gain.expectedSaving}, cost ${c.gain.cost}, cache invalidated ${c.gain.cacheInvalidated}, net ${c.gain.net}${c.gain.declined ? ' (declined)' : ''}</p>`
      : ''
  }`;
}

function lineagePage(detail: LineageDetail, webUi: string): Html {
  const { lineage } = detail;
  return page(
    `Lineage ${lineage.lineageId}`,
    html`<h1>Lineage <code>${lineage.lineageId}</code></h1>
<p>head <code id="head">${lineage.headSessionId}</code> · ${n(lineage.mode)} · source ${n(lineage.source)} · ${lineage.closed ? 'closed' : 'live'}
${lineage.model !== undefined ? html` · model ${n(lineage.model)}` : ''}${lineage.contextWindow !== undefined ? html` · context window ${n(lineage.contextWindow)}` : ''}
· <a id="webui" href="${webUi}" target="_blank" rel="noopener">workflow in the Temporal Web UI</a></p>
<h2>Live state</h2>
<div class="live" id="live" data-src="${lineageHref(lineage.lineageId)}/live">loading…</div>
<h2>Chain, root to head</h2>
<ol id="chain">${detail.sessions.map(
      (s) =>
        html`<li><code>${s.sessionId}</code> generation ${s.generation}, ${s.messageCount} message(s), started ${time(s.startedAt)}${s.endedAt ? html`, ended ${time(s.endedAt)} (${s.endReason})` : html` <strong>live head</strong>`}</li>`,
    )}</ol>
<h2>Compactions</h2>
<table id="compactions"><thead><tr><th>started</th><th>outcome</th><th>trigger</th><th>requests</th><th>model</th><th>tokens</th><th>messages</th><th>summarised</th><th>attempts</th><th>duration</th><th>reason</th><th>gates</th></tr></thead><tbody>
${detail.compactions.map(
  (c) => html`<tr><td><a href="${compactionHref(c.id)}">${time(c.startedAt)}</a></td><td class="outcome-${c.outcome}">${c.outcome}</td><td>${c.trigger}</td>
<td>${(c.requestIds ?? []).map((r) => html`<div><code>${r}</code></div>`)}</td><td>${n(c.model)}</td>
<td class="num">${n(c.tokensBefore)} → ${n(c.tokensAfter)}</td><td class="num">${n(c.messagesBefore)} → ${n(c.messagesAfter)}</td>
<td>${c.summarisedFromSeq != null ? html`seq ${c.summarisedFromSeq}–${n(c.summarisedToSeq)}` : '-'}</td>
<td class="num">${c.attempts}</td><td class="num">${ms(c.durationMs)}</td><td>${n(c.reason)}</td><td>${gateCell(c)}</td></tr>`,
)}
</tbody></table>
${detail.compactions.length === 0 ? html`<p>No compactions yet.</p>` : ''}
<script>${raw(LIVE_SCRIPT)}</script>`,
  );
}

function messageBlock(row: TranscriptRow, label: string, cls: string): Html {
  return html`<div class="msg ${cls}" data-seq="${row.seq}"><div class="meta">#${row.seq}${row.lineageSeq != null ? html` · lineage seq ${row.lineageSeq}` : ''} · ${row.role}${typeof row.message.name === 'string' ? html` (${row.message.name})` : ''} · ${label}</div>${contentText(row)}</div>`;
}

function compactionPage(detail: CompactionDetail): Html {
  const c = detail.compaction;
  return page(
    `Compaction ${c.id}`,
    html`<h1>Compaction <code>${c.id}</code></h1>
<p><a href="${lineageHref(c.lineageId)}">lineage ${c.lineageId}</a> · <span class="outcome-${c.outcome}">${c.outcome}</span>${c.reason ? html` (${c.reason})` : ''} · trigger ${c.trigger} ·
requests ${(c.requestIds ?? []).join(', ')} · model ${n(c.model)} · tokens ${n(c.tokensBefore)} → ${n(c.tokensAfter)} · attempts ${c.attempts} · ${ms(c.durationMs)}</p>
<p id="range">summarised: ${detail.summarised.fromSeq != null ? html`lineage seq ${detail.summarised.fromSeq}–${n(detail.summarised.toSeq)}${detail.summarised.inferred ? ' (inferred from the transcripts)' : ''}` : 'nothing'}
· parent <code>${c.parentSessionId}</code>${c.childSessionId && c.childSessionId !== c.parentSessionId ? html` → child <code>${c.childSessionId}</code>` : c.childSessionId ? ' (in place)' : ''}</p>
${gateCell(c)}
${costLines(c)}
<h2>Summary</h2>
${c.rung === 'masking' ? html`<p id="rung">masking rung: old tool outputs were replaced by placeholders; no summariser call, and the head kept its summary</p>` : ''}
${c.rung === 'trim' ? html`<p id="rung">trim rung: no summary could bring the head under its target, so the oldest messages were dropped; the ledger below lists what they held</p>` : ''}
<div class="msg kind-summary" id="summary">${detail.summary ?? '(no summary: the compaction did not commit)'}</div>
${c.ledger ? html`<h2>Ledger</h2><p>what the compaction kept deterministically, as JSON (the summary renders it for the agent)</p><pre class="msg" id="ledger">${JSON.stringify(c.ledger, null, 2)}</pre>` : ''}
<div class="cols">
<section><h2>Parent transcript</h2><p>orange: summarised · green: kept verbatim · grey: its tool output masked (the original stays archived) · blue: appended during the summary, carried in</p>
<div id="parent">${detail.parent.map((r) => messageBlock(r, r.fate, `fate-${r.fate}`))}</div></section>
<section><h2>What the compaction wrote</h2><p>orange: the summary · green: kept verbatim · grey: a masking placeholder · blue: carried in</p>
<div id="result">${detail.result.map((r) => messageBlock(r, r.kind, `kind-${r.kind}`))}</div></section>
</div>`,
  );
}

async function livePanel(client: SessionsClient, lineageId: string): Promise<Html> {
  try {
    const state = await client.operator.state(lineageId);
    return html`<div id="live-state">queue: ${state.queue.length} request(s)${state.queue.map((q) => html` <code>${q.requestId}</code>`)} ·
${state.inFlight ? html`in flight: job <code>${state.inFlight.jobId}</code> on <code>${state.inFlight.sessionId}</code> (${state.inFlight.requestIds.length} request(s))` : 'nothing in flight'}
${state.progress ? html` · <span id="progress">${formatProgress(state.progress)}</span>` : ''}
· last outcome ${n(state.lastOutcome)}${state.lastReason ? html` (${state.lastReason})` : ''} · ${state.closed ? 'closed' : 'open'}</div>`;
  } catch (error) {
    return html`<div id="live-state">the workflow cannot be asked right now: ${(error as Error).message}</div>`;
  }
}

/** `text` has a UTF-16 surrogate without its other half (not a string Postgres or a page can hold). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `part` percent-decoded, or why it cannot be: malformed escapes, bytes that are not UTF-8, a NUL, a lone surrogate. */
function decodePart(part: string): { value: string } | { problem: string } {
  let value: string;
  try {
    value = decodeURIComponent(part);
  } catch {
    return { problem: 'malformed percent-encoding (or bytes that are not UTF-8)' };
  }
  if (value.includes('\0')) return { problem: 'a NUL character' };
  if (LONE_SURROGATE.test(value)) return { problem: 'a lone surrogate' };
  return { value };
}

/**
 * Why the request's path or query cannot be read as text, or undefined when it can. Checked
 * before routing: the framework would pass such a part on still encoded (or, for %00, as a NUL
 * that Postgres refuses with an error, a 500), never as the 400 it is.
 */
function unreadableUrlPart(url: string): string | undefined {
  const parsed = new URL(url);
  for (const segment of parsed.pathname.split('/')) {
    const decoded = decodePart(segment);
    if ('problem' in decoded) return `the path has ${decoded.problem}`;
  }
  for (const pair of parsed.search.slice(1).split('&')) {
    if (!pair) continue;
    const at = pair.indexOf('=');
    const [rawName, rawValue] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
    const name = decodePart(rawName.replace(/\+/g, ' '));
    if ('problem' in name) return `a query parameter's name has ${name.problem}`;
    const value = decodePart(rawValue.replace(/\+/g, ' '));
    const shown = name.value.length <= 40 ? JSON.stringify(name.value) : 'a query parameter';
    if ('problem' in value) return `the query parameter ${shown} has ${value.problem}`;
  }
  return undefined;
}

function notFound(c: Context, message: string) {
  return c.html(page('Not found', html`<h1>Not found</h1><p>${message}</p><p><a href="/">all lineages</a></p>`), 404);
}

/** The inspector's app; each request reads through the client its token selects (`c.var.client`). */
export function createInspectorApp(options: InspectorOptions): Hono<{ Variables: { client: SessionsClient } }> {
  const app = new Hono<{ Variables: { client: SessionsClient } }>();
  const { authToken } = options;
  const tenants = options.tenants ?? [];
  const allowedHosts = (options.allowedHosts ?? []).map((h) => h.trim().toLowerCase()).filter(Boolean);
  // First, so every answer below (refusals, errors, 404s) carries them.
  app.use(async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
  });
  app.use(async (c, next) => {
    // The Host header; in process (app.request), where there is none, the URL's authority.
    // The health check tells nothing about anyone's data, and a load balancer asks by address.
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (c.req.path === '/healthz' || hostAllowed(host, allowedHosts)) return next();
    // 421 Misdirected Request: this server does not answer for that name (not 403: no credential would help).
    return c.text('Misdirected request: this inspector does not answer to that Host (INSPECTOR_ALLOWED_HOSTS lists the names it does).', 421);
  });
  // The client a request reads through: with no token configured (loopback only), the one;
  // else the operator's token's, or the tenant's whose token it is; none: 401.
  const clientFor = (header: string | undefined): SessionsClient | undefined => {
    if (authToken === undefined && tenants.length === 0) return options.client;
    const given = presentedToken(header);
    // Every token is compared, so the time taken does not tell which one matched.
    const tenant = tenants.filter((t) => sameToken(given, t.token));
    if (authToken !== undefined && sameToken(given, authToken)) return options.client;
    return tenant[0]?.client;
  };
  app.use(async (c, next) => {
    // The health check tells nothing about anyone's data.
    if (c.req.path === '/healthz') return next();
    const client = clientFor(c.req.header('authorization'));
    if (client) {
      c.set('client', client);
      return next();
    }
    c.header('www-authenticate', 'Basic realm="session-compaction inspector", charset="UTF-8"');
    return c.text("Unauthorized: this inspector needs a token (INSPECTOR_AUTH_TOKEN, or a tenant's), as the password or a Bearer token.", 401);
  });
  // A path or query that is not text (%00, %zz, %ED%A0%80) is a bad request: a short plain answer.
  app.use(async (c, next) => {
    const problem = unreadableUrlPart(c.req.url);
    if (problem) return c.text(`Bad request: ${problem}.`, 400);
    await next();
  });
  app.onError((error, c) => {
    if (error instanceof SessionNotFoundError || error instanceof CompactionNotFoundError) return notFound(c, error.message);
    if (error instanceof InvalidInputError) return c.html(page('Bad request', html`<h1>Bad request</h1><p>${error.message}</p>`), 400);
    // Details (which may hold a query's text) go to the log, not to the browser.
    console.error(`inspector: ${c.req.method} ${c.req.path}:`, error);
    return c.html(
      page('Error', html`<h1>Error</h1><p>The inspector could not read what this page shows (is Postgres up?). Details are in the inspector's log.</p>`),
      500,
    );
  });
  app.get('/', async (c) => {
    const q = (name: string) => c.req.query(name) || undefined;
    const filters: ListLineagesOptions = {
      search: q('q'),
      source: q('source'),
      status: q('status') as ListLineagesOptions['status'],
      lastOutcome: q('outcome') as ListLineagesOptions['lastOutcome'],
      after: q('after'),
      limit: q('limit') === undefined ? 50 : parseWholeNumber(q('limit'), 'limit'),
    };
    return c.html(listPage(await c.var.client.operator.listLineages(filters), filters));
  });
  // An id that cannot exist (bad characters, too long) is as unknown as a well-formed one.
  const orNotFound = async <T>(id: string, read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (error) {
      if (error instanceof InvalidInputError) throw new SessionNotFoundError(id);
      throw error;
    }
  };
  app.get('/lineages/:id', async (c) => {
    const detail = await orNotFound(c.req.param('id'), () => c.var.client.operator.history(c.req.param('id')));
    const { namespace, workflowId } = c.var.client.operator.workflowLocation(detail.lineage.lineageId);
    const webUi = `${options.temporalUiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
    return c.html(lineagePage(detail, webUi));
  });
  app.get('/lineages/:id/live', async (c) => c.html(await livePanel(c.var.client, c.req.param('id'))));
  app.get('/compactions/:id', async (c) =>
    c.html(compactionPage(await orNotFound(c.req.param('id'), () => c.var.client.operator.compaction(c.req.param('id'))))),
  );
  app.get('/healthz', (c) => c.text('ok'));
  app.notFound((c) => notFound(c, `nothing at ${c.req.path}`));
  return app;
}

/** Each tenant's token long enough and its own: one token never selects two views. */
export function checkTenantTokens(tenants: readonly Pick<InspectorTenant, 'name' | 'token'>[], authToken: string | undefined): void {
  const seen = new Set(authToken === undefined ? [] : [authToken]);
  for (const { name, token } of tenants) {
    const setting = `INSPECTOR_TENANT_${name.toUpperCase()}_TOKEN`;
    if (token.length < 16) throw new InvalidInputError(setting, 'must be at least 16 characters');
    if (seen.has(token)) throw new InvalidInputError(setting, "must differ from INSPECTOR_AUTH_TOKEN and every other tenant's token");
    seen.add(token);
  }
}

/**
 * Each tenant's database login must be mapped to that tenant (tenant_logins): a login mapped to
 * none reads every tenant's rows, so a tenant's token would see them all. Asked of the database
 * itself (sc_caller_tenant, which sc_reader may call), once, before the inspector answers anything.
 */
export async function checkTenantLogins(tenants: readonly { name: string; databaseUrl: string }[]): Promise<void> {
  for (const { name, databaseUrl } of tenants) {
    const pool = new Pool({ connectionString: databaseUrl, max: 1 });
    try {
      const { rows } = await pool.query<{ tenant: string | null }>('SELECT sc_caller_tenant() AS tenant');
      const tenant = rows[0]?.tenant ?? null;
      if (tenant !== name) {
        const setting = `INSPECTOR_TENANT_${name.toUpperCase().replaceAll('-', '_')}_DATABASE_URL`;
        throw new InvalidInputError(
          setting,
          `must be a login mapped to tenant ${name} in tenant_logins; it is mapped to ${tenant === null ? 'none' : `tenant ${tenant}`}`,
        );
      }
    } finally {
      await pool.end();
    }
  }
}

export interface RunningInspector {
  url: string;
  close(): Promise<void>;
}

/** Serves the inspector on `bindAddress` (host:port; port 0 picks a free one). */
export async function startInspector(options: InspectorOptions & { bindAddress: string }): Promise<RunningInspector> {
  const at = options.bindAddress.lastIndexOf(':');
  const hostname = options.bindAddress.slice(0, at).replace(/^\[|\]$/g, '');
  const tenants = options.tenants ?? [];
  if (!isLoopback(hostname) && !options.authToken && tenants.length === 0) {
    throw new InvalidInputError('INSPECTOR_AUTH_TOKEN', `is required to bind the inspector to ${hostname}, which is not loopback: its pages show transcripts`);
  }
  if (options.authToken !== undefined && options.authToken.length < 16) throw new InvalidInputError('INSPECTOR_AUTH_TOKEN', 'must be at least 16 characters');
  checkTenantTokens(tenants, options.authToken);
  // The bound host answers too, unless it is a wildcard (0.0.0.0, ::), which no Host names.
  const boundHost = hostname === '0.0.0.0' || hostname === '::' ? [] : [hostName(hostname.includes(':') ? `[${hostname}]` : hostname)];
  const app = createInspectorApp({ ...options, allowedHosts: [...(options.allowedHosts ?? []), ...boundHost] });
  const port = Number(options.bindAddress.slice(at + 1));
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname, port }, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  const actualPort = address && typeof address === 'object' ? address.port : port;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${actualPort}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  // Its own database setting, so it can connect as a read-only role (INSPECTOR_DATABASE_URL, else DATABASE_URL).
  const client = await SessionsClient.connect({ config: { ...config, databaseUrl: config.inspectorDatabaseUrl } });
  // Tenant mode: each tenant's pages read through its own reader login (row-level security filters).
  checkTenantTokens(config.inspectorTenants, config.inspectorAuthToken);
  await checkTenantLogins(config.inspectorTenants);
  const tenants = await Promise.all(
    config.inspectorTenants.map(async ({ name, token, databaseUrl }) => ({
      name,
      token,
      client: await SessionsClient.connect({ config: { ...config, databaseUrl } }),
    })),
  );
  const inspector = await startInspector({
    client,
    temporalUiUrl: config.temporalUiUrl,
    bindAddress: config.inspectorBindAddress,
    authToken: config.inspectorAuthToken,
    allowedHosts: config.inspectorAllowedHosts,
    tenants,
  });
  console.log(`inspector: ${inspector.url} (read-only; Temporal Web UI ${config.temporalUiUrl})`);
  const stop = async () => {
    await inspector.close();
    await client.close();
    for (const tenant of tenants) await tenant.client.close();
    process.exit(0);
  };
  const stopOrFail = () => {
    stop().catch((error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    });
  };
  process.once('SIGINT', stopOrFail);
  process.once('SIGTERM', stopOrFail);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
