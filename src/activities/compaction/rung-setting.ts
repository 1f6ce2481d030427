/**
 * Which rungs a lineage may use (issue 37 §1): the names it was created with (lineages.rungs,
 * checked by session_create against sc_rung_names(), which lists RUNGS' names), else the worker's
 * default (COMPACTION_RUNGS, every rung when unset). A rung the lineage may not use passes with
 * NOT_ENABLED, so the audit row's passed_rungs says so; the others run in RUNGS' order.
 */
import { NOT_ENABLED, type Rung, RUNGS } from './rungs';

/** The names of RUNGS, cheapest first: what a lineage may name (sc_rung_names() in SQL holds the same list). */
export const RUNG_NAMES: readonly string[] = RUNGS.map((r) => r.name);

/**
 * A rung setting checked: its names in RUNGS' order without repeats, or a message saying what
 * is wrong (an empty list, an unknown name, or the trim alone: it drops the oldest messages
 * without a summary, a last resort behind another rung).
 */
export function checkRungSetting(names: readonly string[], known: readonly string[] = RUNG_NAMES): { rungs: string[] } | { problem: string } {
  const unknown = names.filter((n) => !known.includes(n));
  if (names.length === 0 || unknown.length > 0) {
    return { problem: `must be a non-empty list of ${known.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}` };
  }
  const rungs = known.filter((n) => names.includes(n));
  if (rungs.length === 1 && rungs[0] === 'trim') return { problem: 'must name a rung other than trim (the trim is a last resort behind another rung)' };
  return { rungs };
}

/** The worker's default setting (COMPACTION_RUNGS), checked at start: an unknown name stops the worker. */
export function defaultRungSetting(names: readonly string[] | undefined): readonly string[] {
  if (names === undefined) return RUNG_NAMES;
  const checked = checkRungSetting(names);
  if ('problem' in checked) throw new Error(`COMPACTION_RUNGS ${checked.problem}`);
  return checked.rungs;
}

/** RUNGS with every rung outside `enabled` passing at once (it runs nothing and pays nothing). */
export function rungsFor(enabled: readonly string[], rungs: readonly Rung[] = RUNGS): Rung[] {
  return rungs.map((rung) => (enabled.includes(rung.name) ? rung : { name: rung.name, propose: () => Promise.resolve({ passed: NOT_ENABLED }) }));
}
