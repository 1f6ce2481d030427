/**
 * One attempt of a compaction job, top to bottom: begin (the audit row, the lineage, its ledger
 * and the snapshot in one statement), the earlier decision, the snapshot, the rungs' proposal,
 * then gate and commit. Every step is idempotent by job id, so a retried attempt, or a late
 * result of a lost one, never commits a second child. The heartbeat is the lease.
 */
import { Context, log } from '@temporalio/activity';
import { estimateGain, minGainReason } from '../../compaction/gain';
import { beginJob } from '../../db/session-store';
import type { Answer } from '../../workflows/contract';
import { commitProposal } from './commit';
import { decider } from './decide';
import { earlierDecision } from './decision';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import { Heartbeat, incarnationOfPreviousAttempt } from './heartbeat';
import { RUNG_NAMES, rungsFor } from './rung-setting';
import { propose, type RungCosts } from './rungs';
import { takeSnapshot } from './snapshot';

export async function compactionAttempt(input: CompactSessionInput, deps: CompactionActivityDeps): Promise<Answer> {
  const heartbeat = new Heartbeat(deps.heartbeat ?? ((details: unknown) => Context.current().heartbeat(details)));
  heartbeat.beat(); // before any I/O: the lease starts with the attempt
  const attempt = Context.current().info.attempt;
  // A retried attempt begins only on the incarnation its predecessor began on.
  const incarnation = input.incarnation ?? incarnationOfPreviousAttempt();
  const begun = await beginJob(deps.db, { ...input, incarnation }, deps.summariser.model, attempt);

  // The wire names the head the job was sent for `parentSessionId` (recorded histories hold it).
  const decision = earlierDecision(begun, { headSessionId: input.parentSessionId, generation: input.generation }, attempt);
  if (decision?.kind === 'superseded')
    log.warn('attempt superseded before its first write; it writes nothing', { jobId: input.jobId, attempt, reason: decision.answer.reason });
  if (decision && decision.kind !== 'stale') return decision.answer;
  if ('erased' in begun) throw new Error('unreachable: an erased lineage is decided above');
  const head = { sessionId: begun.lineage.headSessionId, generation: begun.lineage.generation };
  if (decision) return decider(deps, input, attempt, head).stale(decision.answer);
  // From here on every heartbeat names the incarnation.
  heartbeat.setIncarnation(begun.lineage.incarnation);

  const snapshot = takeSnapshot(begun, input, deps);
  const decide = decider(deps, input, attempt, head, snapshot);
  const held = snapshot.dialect.holdReason(snapshot.messages);
  if (held) return decide.refuse(held, { held: true });
  if (snapshot.plan.middle.length === 0) {
    return decide.refuse(`nothing to summarise: all ${snapshot.messagesBefore} messages fit in the kept head and tail`);
  }

  // The rungs the lineage may use; the others pass as not enabled (rung-setting.ts).
  const enabled = snapshot.lineage.rungs ?? deps.rungs ?? RUNG_NAMES;
  // The minimum-gain guard judges automatic jobs only, before any rung pays (src/compaction/gain.ts).
  const gain = guarded(input, deps)
    ? estimateGain(
        {
          tokensBefore: snapshot.tokensBefore,
          middleTokens: snapshot.plan.middle.reduce((sum, i) => sum + snapshot.tokens[i], 0),
          summarises: enabled.includes('summary'),
          contextWindow: snapshot.lineage.contextWindow,
        },
        deps.minGain!,
      )
    : undefined;
  if (gain?.declined) return decide.refuse(minGainReason(gain), { gain, declined: true });

  const step = { snapshot, input, deps, heartbeat, decide };
  const costs: RungCosts = {};
  const proposed = await propose(step, rungsFor(enabled), costs);
  const audit = { costs, gain };
  if ('refusal' in proposed) return decide.refuse(proposed.refusal, { ...proposed.usage, passedRungs: proposed.passedRungs, ...audit });
  return commitProposal(step, attempt, proposed, audit);
}

/**
 * An automatic job (the threshold asked, nothing forced) while the guard is on. A job that
 * other requests joined is not judged: the job's trigger is its first request's, and a joined
 * one may be a caller's (the workflow sends no trigger per request).
 */
function guarded(input: CompactSessionInput, deps: CompactionActivityDeps): boolean {
  return input.trigger === 'threshold' && input.requestIds.length === 1 && !input.force && (deps.minGain?.turns ?? 0) > 0;
}
