/** What the compaction activities are built from (the worker and the tests inject them) and what they are sent. */
import type { GainPolicy } from '../../compaction/gain';
import type { PlanOptions } from '../../compaction/plan';
import type { Database } from '../../db/database';
import type { AutoCompactionPolicy } from '../../db/session-store';
import type { CompactionJob, CompactionMode } from '../../workflows/contract';
import type { NativeCompaction } from '../native-compaction';
import type { Summariser } from '../summariser';

/** The compaction activity's input: the job (its wire shape: `parentSessionId` is the head it was sent for) and the request's options. */
export interface CompactSessionInput extends CompactionJob {
  mode: CompactionMode;
  focusTopic?: string;
  force: boolean;
}

export interface CompactionActivityDeps {
  db: Database;
  summariser: Summariser;
  plan: Omit<PlanOptions, 'force'>;
  /** Tokens of middle one summariser request may hold; a larger middle is summarised in chunks. */
  summaryInputTokens: number;
  /** The ledger's bound: `percent` of the context window (when known), at most `maxTokens`; requests verbatim up to `requestChars`. */
  ledger: { percent: number; maxTokens: number; requestChars: number };
  /** The masking rung, tried before a summary: on when given (its target, a percentage of the threshold or of the context window). */
  masking?: { targetPercent: number };
  /** The native rung's providers (NATIVE_COMPACTION=on); absent: the rung passes. */
  native?: NativeCompaction;
  /** How summary requests are laid out (COMPACTION_SUMMARY_LAYOUT); 'rendered' when absent. */
  summaryLayout?: 'prefix' | 'rendered';
  /** The rungs a lineage created without a setting may use (COMPACTION_RUNGS); absent: every rung. */
  rungs?: readonly string[];
  /** The minimum-gain guard for automatic compactions (src/compaction/gain.ts); off when absent or its turns are 0. */
  minGain?: GainPolicy;
  /** The threshold policy's cooldown ladder (see AutoCompactionPolicy). */
  autoCompaction: AutoCompactionPolicy;
  /** How often the activity heartbeats while it works (the SDK throttles further). */
  heartbeatIntervalMs: number;
  /** Seam for tests: a heartbeat that a test can silence to simulate a partitioned worker. */
  heartbeat?: (details: unknown) => void;
}
