/**
 * The rung setting (src/activities/compaction/rung-setting.ts): the names a lineage may use are
 * RUNGS' names, the same list SQL checks at create (sc_rung_names); a rung outside the setting
 * passes as not enabled and pays nothing.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRungSetting, defaultRungSetting, RUNG_NAMES, rungsFor } from '../../src/activities/compaction/rung-setting';
import { NOT_ENABLED, RUNGS, type RungStep } from '../../src/activities/compaction/rungs';

describe('the rung setting', () => {
  it('names the rungs of RUNGS, and SQL (sc_rung_names) lists the same, in the same order', () => {
    expect(RUNG_NAMES).toEqual(RUNGS.map((r) => r.name));
    const sqlText = readFileSync(path.join(__dirname, '../../src/db/functions/sc_rung_names.sql'), 'utf8');
    const listed = /ARRAY\[([^\]]*)\]/
      .exec(sqlText)![1]
      .split(',')
      .map((s) => s.trim().replace(/^'|'$/g, ''));
    expect(listed).toEqual(RUNG_NAMES);
  });

  it('keeps the names in RUNGS order without repeats', () => {
    expect(checkRungSetting(['trim', 'summary', 'summary'])).toEqual({ rungs: ['summary', 'trim'] });
    expect(checkRungSetting(['masking'])).toEqual({ rungs: ['masking'] });
  });

  it('refuses an empty list, an unknown name and the trim alone', () => {
    expect(checkRungSetting([])).toEqual({ problem: expect.stringMatching(/^must be a non-empty list of masking, native, summary, trim/) });
    expect(checkRungSetting(['summary', 'native-ish'])).toEqual({ problem: expect.stringContaining('(unknown: native-ish)') });
    expect(checkRungSetting(['trim', 'trim'])).toEqual({ problem: expect.stringContaining('other than trim') });
  });

  it('the worker default: every rung when unset; a bad COMPACTION_RUNGS stops the worker', () => {
    expect(defaultRungSetting(undefined)).toEqual(RUNG_NAMES);
    expect(defaultRungSetting(['summary', 'masking'])).toEqual(['masking', 'summary']);
    expect(() => defaultRungSetting(['sumary'])).toThrow(/^COMPACTION_RUNGS must be a non-empty list/);
  });

  it('a rung outside the setting passes as not enabled without running', async () => {
    const rungs = rungsFor(['summary']);
    expect(rungs.map((r) => r.name)).toEqual(RUNG_NAMES);
    const summaryAt = RUNG_NAMES.indexOf('summary');
    expect(rungs[summaryAt]).toBe(RUNGS[summaryAt]);
    // Not called with a real step: a rung that is not enabled reads nothing of it.
    for (let i = 0; i < rungs.length; i++) if (i !== summaryAt) await expect(rungs[i].propose({} as RungStep)).resolves.toEqual({ passed: NOT_ENABLED });
  });
});
