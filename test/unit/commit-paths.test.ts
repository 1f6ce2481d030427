/**
 * CommitPaths: which path a lineage's next commit takes (src/db/commit.ts). A commit that ran
 * out of optimistic tries makes the lineage's next commits lock first; after a run of them one
 * tries the optimistic path again; a commit that went through optimistically forgets the lineage.
 */
import { describe, expect, it } from 'vitest';
import { CommitPaths } from '../../src/db/commit';

describe('CommitPaths', () => {
  it('locks first after an exhausted commit, for eight commits, then probes the optimistic path', () => {
    const paths = new CommitPaths();
    expect(paths.lockFirst('a')).toBe(false);
    paths.record('a', 'optimistic');
    expect(paths.lockFirst('a')).toBe(false);
    paths.record('a', 'exhausted');
    const chosen: boolean[] = [];
    for (let i = 0; i < 9; i++) {
      const lockFirst = paths.lockFirst('a');
      chosen.push(lockFirst);
      if (lockFirst) paths.record('a', 'lockedFirst');
    }
    expect(chosen).toEqual([true, true, true, true, true, true, true, true, false]);
    expect(paths.lockFirst('b')).toBe(false); // per lineage
  });

  it('a probe that runs out again locks first again; one that goes through forgets the lineage', () => {
    const paths = new CommitPaths();
    paths.record('a', 'exhausted');
    for (let i = 0; i < 8; i++) paths.record('a', 'lockedFirst');
    expect(paths.lockFirst('a')).toBe(false);
    paths.record('a', 'exhausted');
    expect(paths.lockFirst('a')).toBe(true);
    paths.record('a', 'optimistic');
    expect(paths.lockFirst('a')).toBe(false);
  });

  it('not adaptive: every commit tries the optimistic path first', () => {
    const paths = new CommitPaths();
    paths.adaptive = false;
    paths.record('a', 'exhausted');
    expect(paths.lockFirst('a')).toBe(false);
  });

  it('remembers at most 10,000 lineages, forgetting the least recently used', () => {
    const paths = new CommitPaths();
    for (let i = 0; i <= 10_000; i++) paths.record(`l${i}`, 'exhausted');
    expect(paths.lockFirst('l0')).toBe(false);
    expect(paths.lockFirst('l1')).toBe(true);
    expect(paths.lockFirst('l10000')).toBe(true);
  });
});
