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
const files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json')).sort();

describe('replay of recorded session workflow histories', () => {
  it('covers every significant path', () => {
    for (const scenario of ['rotation', 'in-place', 'coalesced', 'stale', 'refused', 'aborted', 'lost-lease', 'continue-as-new.run1']) {
      expect(files).toContain(`${scenario}.json`);
    }
  });

  it.each(files)('%s replays without nondeterminism', async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, file.replace(/\.json$/, '')),
    ).resolves.toBeUndefined();
  });
});
