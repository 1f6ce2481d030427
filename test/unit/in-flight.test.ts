/**
 * In-flight work in the ledger (issue 39): each kind found in every dialect, kept while open
 * through ten compactions with a summariser that keeps nothing, released when done, never
 * folded while open, and the `facts` gate refusing a head that lost one. Counted with the
 * generator's own list of planted facts (test/support/planted.ts), never with what the code
 * under test extracted.
 */
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type Message } from '../../src/compaction/dialects';
import { keepsFacts, runGates } from '../../src/compaction/gates';
import { emptyInFlight, errorLinesOf, InFlightTracker, nextStep, planStepsOf, saysResolved, standingInstructionsIn } from '../../src/compaction/in-flight';
import { buildLedger, emptyLedger, type Ledger, ledgerFrom, renderLedger, summaryWithLedger } from '../../src/compaction/ledger';
import { planCompaction } from '../../src/compaction/plan';
import { summaryProposal } from '../../src/compaction/proposal';
import { buildSummaryPrompt } from '../../src/compaction/summary-prompt';
import { estimateTokens } from '../../src/compaction/tokens';
import { isOpen, plantedSession } from '../support/planted';

const OPTIONS = { requestChars: 500, budgetTokens: 6000 };
const LOSSY = 'The agent worked on some files.';
const PLAN = { tailTokenBudget: 400, minTailGroups: 1, headGroups: 1, force: false };

const haystack = (messages: readonly Message[], dialect: ReturnType<typeof dialectOf>) =>
  messages.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`).join('\n');

function compactOnce(messages: Message[], seqs: Map<Message, number>, previous: Ledger, name: (typeof DIALECT_NAMES)[number], options = OPTIONS) {
  const dialect = dialectOf(name);
  const plan = planCompaction(messages, { ...PLAN, dialect });
  const proposal = summaryProposal(
    messages,
    messages.map((m) => seqs.get(m) ?? null),
    plan,
    dialect,
    LOSSY,
    previous,
    options,
  );
  const after = proposal.candidate.map((c) => c.message);
  const report = runGates({
    before: messages,
    after,
    tokensBefore: messages.reduce((s, m) => s + estimateTokens(m, dialect), 0),
    tokensAfter: after.reduce((s, m) => s + estimateTokens(m, dialect), 0),
    summaryIndices: proposal.summaryIndices,
    facts: proposal.demand,
    dialect,
  });
  return { after, ledger: proposal.ledger, report, demand: proposal.demand, proposal };
}

/** A tracker over plain chat messages (openai-chat), for the rules themselves. */
function track(messages: Message[]) {
  const dialect = dialectOf('openai-chat');
  const tracker = new InFlightTracker([], emptyInFlight(), (c) => c.name, { requestChars: 500 });
  messages.forEach((m, i) => tracker.message(m, i + 1, dialect));
  tracker.finish();
  return tracker;
}
const call = (id: string, name: string, args: unknown): Message => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});
const result = (id: string, content: string): Message => ({ role: 'tool', tool_call_id: id, content });

describe('in-flight rules', () => {
  it('reads the lines that say why a run failed: codes, the failing test, the exception', () => {
    const output = 'collected 3 items\nsrc/a.ts(4,2): error TS2345: bad arg\nFAILED tests/test_a.py::test_x - AssertionError\nok line\nExit code: 1';
    expect(errorLinesOf(output)).toEqual(['src/a.ts(4,2): error TS2345: bad arg', 'FAILED tests/test_a.py::test_x - AssertionError']);
    const error = { source: 'npm test', line: 'exit 1', lines: ['error TS2345: bad arg'], resolved: false };
    expect(saysResolved('Fixed TS2345 in src/a.ts.', error)).toBe(true);
    expect(saysResolved('TS2345 is not fixed yet.', error)).toBe(false);
    expect(saysResolved('Fixed the parser.', error)).toBe(false);
  });

  it("reads TodoWrite's and update_plan's plans verbatim, and their next step", () => {
    const todo = planStepsOf({
      todos: [
        { content: 'Create useTodos hook', status: 'completed', activeForm: 'x' },
        { content: 'Create Filter component', status: 'in_progress' },
      ],
    });
    expect(todo).toEqual([
      { status: 'completed', text: 'Create useTodos hook' },
      { status: 'in_progress', text: 'Create Filter component' },
    ]);
    expect(nextStep({ tool: 'TodoWrite', steps: todo })?.text).toBe('Create Filter component');
    const plan = planStepsOf(
      '{"plan":[{"step":"Inspect LM Studio integration","status":"completed"},{"step":"Implement handleLocalChat","status":"pending"}]}',
    );
    expect(nextStep({ tool: 'update_plan', steps: plan })?.text).toBe('Implement handleLocalChat');
  });

  it('finds standing instructions in a request, verbatim', () => {
    expect(standingInstructionsIn('Fix the parser. Never edit src/generated.ts! Please always run the linter first.\nThanks')).toEqual([
      'Never edit src/generated.ts!',
      'Please always run the linter first.',
    ]);
    expect(standingInstructionsIn('Fix the parser; it never terminates.')).toEqual([]);
  });

  it("keeps Claude Code's background shell until a result reports it killed or finished, and a sync subagent never", () => {
    const started = [
      { role: 'user', content: 'Start the dev server and check it.' },
      call('c1', 'Bash', { command: 'npm run dev', run_in_background: true }),
      result('c1', 'Command running in background with ID: bash_2'),
      call('c2', 'BashOutput', { bash_id: 'bash_2' }),
      result('c2', '<status>running</status>\n\n<stdout>ready</stdout>'),
      call('c3', 'Task', { description: 'Analyze project structure', prompt: 'Analyze it.' }),
      result('c3', 'Based on my analysis, the project has completed its migration.'),
    ];
    expect(track(started).state.background).toEqual([{ id: 'bash_2', tool: 'Bash', task: 'npm run dev' }]);
    const killed = [
      ...started,
      call('c4', 'KillBash', { shell_id: 'bash_2' }),
      result('c4', '{"success":true,"message":"Successfully killed shell: bash_2 (npm run dev)"}'),
    ];
    expect(track(killed).state.background).toEqual([]);
  });

  it('keeps a user turn queued behind an unanswered one until the agent answers, and an error until the same command passes or the agent says it is fixed', () => {
    const open = [
      { role: 'user', content: 'Fix the build.' },
      call('c1', 'bash', { command: 'npm run build' }),
      result('c1', 'src/x.ts(1,1): error TS2304: Cannot find name\nExit code: 2'),
      { role: 'user', content: 'Also bump the version.' },
      call('c2', 'bash', { command: 'npm version patch' }),
      result('c2', 'v1.0.1\nExit code: 0'),
    ];
    const t = track(open);
    expect(t.state.queued.map((q) => q.text)).toEqual(['Fix the build.', 'Also bump the version.']);
    expect(t.errors.filter((e) => !e.resolved).map((e) => [e.source, e.lines])).toEqual([['npm run build', ['src/x.ts(1,1): error TS2304: Cannot find name']]]);
    const answered = track([...open, { role: 'assistant', content: 'Bumped to 1.0.1; the build still fails on TS2304.' }]);
    expect(answered.state.queued).toEqual([]);
    expect(answered.errors.filter((e) => !e.resolved)).toHaveLength(1);
    expect(track([...open, call('c3', 'bash', { command: 'npm run build' }), result('c3', 'Exit code: 0')]).errors.every((e) => e.resolved)).toBe(true);
    expect(track([...open, { role: 'assistant', content: 'Fixed TS2304 by importing the type.' }]).errors.every((e) => e.resolved)).toBe(true);
  });
});

describe.each(DIALECT_NAMES)('in-flight work in the ledger (%s)', (name) => {
  const dialect = dialectOf(name);

  it('keeps every open planted in-flight fact through ten compactions with a summariser that keeps nothing, and releases what is done', () => {
    const { messages, facts } = plantedSession(name, 3, 40, { outputLines: 4, inFlight: true });
    const seqs = new Map<Message, number>(messages.map((m, i) => [m, i + 1]));
    const starts = messages.flatMap((m, i) => (dialect.isRealUserRequest(m) ? [i] : []));
    let appended = starts[3];
    let head = messages.slice(0, appended);
    let ledger = emptyLedger();
    const kinds = new Set<string>();
    let released = 0;
    /** The highest sequence number summarised so far: what the ledger has read (a release still in the kept tail is the tail's). */
    let summarised = 0;
    for (let generation = 1; generation <= 10; generation++) {
      // Up to the session's last request: ten compactions over its turns, each after a turn or more.
      const left = starts.filter((s) => s > appended);
      const take = Math.ceil((left.length - 1) / (11 - generation));
      const to = left[take];
      head = [...head, ...messages.slice(appended, to)];
      appended = to;
      if (dialect.holdReason(head)) continue;
      const once = compactOnce(head, seqs, ledger, name);
      expect(once.report.failed, `generation ${generation}: ${once.report.failed?.reason}`).toBeUndefined();
      for (const i of once.proposal.replaced) summarised = Math.max(summarised, seqs.get(head[i]) ?? 0);
      head = once.after;
      ledger = ledgerFrom(JSON.parse(JSON.stringify(once.ledger)));
      const text = haystack(head, dialect);
      for (const f of facts.inFlight.filter((x) => isOpen(x, appended))) {
        expect(text, `generation ${generation}: ${f.kind} ${f.fact}`).toContain(f.fact);
        kinds.add(f.kind);
      }
      // Released work is gone from the ledger's in-flight entries.
      const open = [
        ...ledger.errors.filter((e) => !e.resolved).flatMap((e) => [e.source, ...(e.lines ?? [])]),
        ...ledger.inFlight.background.map((b) => b.id),
      ].join('\n');
      for (const f of facts.inFlight.filter(
        (x) => x.closeAt !== undefined && x.closeAt + 3 <= summarised && (x.kind === 'running subagent' || x.kind === 'open error'),
      )) {
        expect(open, `generation ${generation}: released ${f.fact}`).not.toMatch(new RegExp(`${f.fact.replace(/[.*+?^$()|[\]\\]/g, '\\$&')}(?![\\w])`));
        released++;
      }
    }
    expect([...kinds].sort()).toEqual(['edited last', 'instruction', 'open error', 'plan next step', 'queued turn', 'running subagent']);
    expect(released).toBeGreaterThan(0);
  });

  it('never folds an open entry to fit the budget, and the gate refuses a head that lost one', () => {
    const { messages } = plantedSession(name, 5, 20, { outputLines: 4, inFlight: true });
    const seqs = new Map<Message, number>(messages.map((m, i) => [m, i + 1]));
    const head = messages.slice(0, messages.length - 1);
    const dialectHold = dialect.holdReason(head);
    const target = dialectHold ? messages : head;
    const once = compactOnce(target, seqs, emptyLedger(), name, { requestChars: 500, budgetTokens: 50 });
    expect(once.report.failed, once.report.failed?.reason).toBeUndefined();
    // Folded to a 50-token budget: requests and files went, no open entry did.
    expect(once.ledger.folded.requests + once.ledger.folded.files).toBeGreaterThan(0);
    expect(once.ledger.inFlight.plan?.steps.length).toBe(3);
    expect(once.ledger.errors.length).toBeGreaterThan(0);
    expect(once.ledger.inFlight.background.length + once.ledger.inFlight.instructions.length).toBeGreaterThan(0);
    // The same head with the in-flight entries left out of the ledger it renders: refused.
    const without: Ledger = { ...once.ledger, errors: [], inFlight: emptyInFlight() };
    const at = once.proposal.summaryIndices[0];
    const lost = once.after.map((m, i) =>
      i === at ? dialect.summaryMessages(summaryWithLedger(LOSSY, without), once.after[at + once.proposal.summaryIndices.length])[0] : m,
    );
    expect(keepsFacts(lost, once.demand, dialect)).toMatch(/open in-flight entr/);
    // A ledger that folded them (the fold counted, the facts listed as folded) is what the gate lets go.
    expect(keepsFacts(lost, { ...once.demand, folded: { ...once.demand.folded, inFlight: once.demand.expected.inFlight } }, dialect)).toBeUndefined();
  });
});

describe('in-flight entries in a stored ledger', () => {
  it('round-trips through the audit row, and an old row without them starts empty', () => {
    const dialect = dialectOf('anthropic');
    const { messages } = plantedSession('anthropic', 9, 8, { outputLines: 2, inFlight: true, thinking: false });
    const { ledger } = buildLedger(
      emptyLedger(),
      messages.map((message, i) => ({ message, seq: i + 1 })),
      dialect,
      OPTIONS,
    );
    expect(ledger.inFlight.plan?.tool).toBe('TodoWrite');
    expect(ledgerFrom(JSON.parse(JSON.stringify(ledger)))).toEqual(JSON.parse(JSON.stringify(ledger)));
    const old = JSON.parse(JSON.stringify(ledger)) as Record<string, unknown>;
    delete old.inFlight;
    expect(ledgerFrom(old).inFlight).toEqual(emptyInFlight());
  });
});

describe('no drift across generations', () => {
  it('gives the summariser the stored ledger as fixed text beside the new range (not in the prefix layout, whose head holds it)', () => {
    const ledger = renderLedger({ ...emptyLedger(), inFlight: { ...emptyInFlight(), queued: [{ seq: 4, text: 'Also bump the version.' }] } });
    const base = { lines: ['assistant: done'], force: false, chunk: { index: 1, count: 1 }, cut: false };
    const [system, user] = buildSummaryPrompt({ ...base, ledger, previousSummary: 'Earlier: set up CI.' });
    expect(system.content).toContain('do not restate, reword or correct it');
    expect(user.content).toContain(`Ledger so far (fixed text, kept by the service):\n${ledger}`);
    expect(String(user.content).indexOf('Ledger so far')).toBeLessThan(String(user.content).indexOf('Messages to summarise'));
    const prefixed = buildSummaryPrompt({ ...base, lines: [], ledger, prefix: { messages: [], from: 1, to: 1 } });
    expect(prefixed[1].content).not.toContain('Ledger so far');
  });
});
