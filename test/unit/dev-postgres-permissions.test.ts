/**
 * The embedded Postgres runs as a `postgres` user when we are root, so the directory holding its
 * data directory must let others through. Making it so must keep the directory's other bits: a
 * shared parent such as /tmp (1777) set to 0755 lost its sticky bit and everyone's right to
 * write, which broke every other program on the machine (found when a test put its data
 * directory straight in the temporary directory).
 */
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { letOthersTraverse } from '../../src/dev/postgres';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const modeOf = (p: string) => statSync(p).mode & 0o7777;

describe('letOthersTraverse', () => {
  it('keeps a shared directory world-writable and sticky', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'sc-perm-'));
    chmodSync(dir, 0o1777);
    letOthersTraverse(dir);
    expect(modeOf(dir).toString(8)).toBe('1777');
  });

  it('adds read and search for others to a private directory, and nothing else', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'sc-perm-'));
    chmodSync(dir, 0o700);
    letOthersTraverse(dir);
    expect(modeOf(dir).toString(8)).toBe('705');
  });
});
