import type { ReliabilityRow } from './scenarios';

/** The reliability table of docs/reliability.md. */
export function reliabilityTable(rows: ReliabilityRow[]): string {
  const header =
    '| scenario | faults injected | requests | answered | compactions committed | forks | orphans | lost writes | duplicated writes | errors surfaced to callers | recovery (s) |';
  const lines = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.faults} | ${r.requests} | ${r.answered} | ${r.compactionsCommitted} | ${r.forks} | ${r.orphans} | ${r.lostWrites} | ${r.duplicatedWrites} | ${r.errorsToCallers} | ${r.recoverySeconds ?? 'n/a'} |`,
  );
  return [header, '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |', ...lines].join('\n');
}
