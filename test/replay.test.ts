/**
 * Replays recorded histories of the session workflow against today's workflow code. A
 * failure here means a change would break sessions that are open now: see README,
 * "Changing workflow code", before re-recording (npm run replay:record).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

const HISTORIES_DIR = path.resolve(__dirname, 'replay/histories');
/** Histories from older workflow code, never re-recorded (see test/evolution.test.ts). */
const FIXED_DIR = path.resolve(__dirname, 'replay/fixed');
const files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json')).sort();
const fixed = readdirSync(FIXED_DIR).filter((f) => f.endsWith('.json')).sort();

describe('replay of recorded session workflow histories', () => {
  it('covers every significant path', () => {
    for (const scenario of ['rotation', 'in-place', 'coalesced', 'stale', 'refused', 'aborted', 'lost-lease', 'continue-as-new.run1']) {
      expect(files).toContain(`${scenario}.json`);
    }
  });

  it.each([...files.map((f) => path.join(HISTORIES_DIR, f)), ...fixed.map((f) => path.join(FIXED_DIR, f))])('%s replays without nondeterminism', async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, path.basename(file, '.json')),
    ).resolves.toBeUndefined();
  });
});
