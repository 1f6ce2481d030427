/**
 * Changing workflow code with sessions open. The close path gained a command (marking the
 * lineage closed in Postgres) after histories were recorded; it is guarded by patched().
 * Old histories must replay on today's code, the guard must be what makes that true, and
 * new executions must take the new path.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import { describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../src/config';
import { LineageClosedError } from '../src/errors';
import { lineageWorkflowId } from '../src/workflows/contract';
import { PATCH_CHECK_CLOSED_AT_START, PATCH_CLOSE_MARKS_LINEAGE } from '../src/workflows/session-lineage';
import { conversation, uniqueId, useTestStack } from './support/stack';

// Recorded before the close path changed; kept apart from the re-recordable histories.
const recorded = () => historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, 'replay/fixed/rotation-before-close-patch.json'), 'utf8')));
const stack = useTestStack();

describe('evolving the workflow with patched()', () => {
  it('a history recorded before the change replays on today code', async () => {
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, recorded(), 'rotation')).resolves.toBeUndefined();
  });

  it('without the patch guard the same history fails to replay', async () => {
    // Today's workflow code with the guard removed, bundled from a copy inside the project
    // (so its imports resolve against node_modules).
    const dir = path.join(inject('stack').runDir, 'unguarded');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    cpSync(path.join(PROJECT_ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
    const file = path.join(dir, 'src/workflows/session-lineage.ts');
    const source = readFileSync(file, 'utf8');
    const unguarded = source.replace('if (patched(PATCH_CLOSE_MARKS_LINEAGE)) await markLineageClosed', 'await markLineageClosed');
    expect(unguarded).not.toBe(source);
    writeFileSync(file, unguarded);
    const { code } = await bundleWorkflowCode({ workflowsPath: path.join(dir, 'src/workflows/index.ts'), logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never });
    await expect(Worker.runReplayHistory({ workflowBundle: { code } }, recorded(), 'rotation')).rejects.toThrow(/[Nn]ondeterminism/);
  });

  it('new executions take the new path: closing marks the lineage closed', async () => {
    const id = uniqueId('ev');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    const { sessionId: head } = await stack().client.compact(id);
    await stack().client.closeSession(head);

    const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
    const patches = (history.events ?? [])
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
      .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0].data!).toString('utf8')).id);
    expect(patches.filter((id) => id === PATCH_CLOSE_MARKS_LINEAGE)).toHaveLength(1);
    const [lineage] = (await stack().db.db.execute(sql`select closed_at from lineages where id = ${id}`)).rows as Array<{ closed_at: Date | null }>;
    expect(lineage.closed_at).not.toBeNull();
    await expect(stack().client.append(head, [{ role: 'user', content: 'after close' }])).rejects.toBeInstanceOf(LineageClosedError);
    await expect(stack().client.compact(head)).rejects.toBeInstanceOf(LineageClosedError);
  });
});

/** Today's workflow code with one change to its source, bundled from a copy inside the project. */
async function bundleWithout(name: string, from: string, to: string): Promise<string> {
  const dir = path.join(inject('stack').runDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(PROJECT_ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
  const file = path.join(dir, 'src/workflows/session-lineage.ts');
  const source = readFileSync(file, 'utf8');
  const changed = source.replace(from, to);
  expect(changed).not.toBe(source);
  writeFileSync(file, changed);
  const { code } = await bundleWorkflowCode({ workflowsPath: path.join(dir, 'src/workflows/index.ts'), logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never });
  return code;
}

describe('the check-closed-at-start patch', () => {
  // Recorded before a new run asked Postgres whether its lineage was closed.
  const before = () => historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, 'replay/fixed/v1-rotation.json'), 'utf8')));

  it('a history from before replays on today code, and fails to without the guard', async () => {
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, before(), 'v1-rotation')).resolves.toBeUndefined();
    const code = await bundleWithout('unguarded-closed-check', 'patched(PATCH_CHECK_CLOSED_AT_START) &&', 'true &&');
    await expect(Worker.runReplayHistory({ workflowBundle: { code } }, before(), 'v1-rotation')).rejects.toThrow(/[Nn]ondeterminism/);
  });

  it('new executions take the new path', async () => {
    const id = uniqueId('ev');
    await stack().client.createSession({ sessionId: id });
    await stack().client.closeSession(id);
    const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
    const patches = (history.events ?? [])
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
      .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0].data!).toString('utf8')).id);
    expect(patches).toContain(PATCH_CHECK_CLOSED_AT_START);
  });
});
