/**
 * Patch ids: each guards a change to the commands the workflow emits, so that histories of
 * open lineages recorded before the change still replay (docs/development.md, "Changing workflow code";
 * test/replay/evolution.test.ts proves each guard). Never rename or reuse one.
 */

/**
 * Close marks the lineage closed in Postgres before the run completes. The first release's
 * close completed without it; test/replay/fixed/rotation-before-close-patch.json is one such history.
 */
export const PATCH_CLOSE_MARKS_LINEAGE = 'close-marks-lineage-closed';
/** Continue as new when due even while requests wait, carrying them (not only when idle). */
export const PATCH_CONTINUE_AS_NEW_UNDER_LOAD = 'continue-as-new-under-load';
/** A new run (not a continuation) first asks Postgres whether the lineage was closed. */
export const PATCH_CHECK_CLOSED_AT_START = 'check-closed-at-start';
/** Requests that joined a running job are recorded with it, so their answer outlives the run. */
export const PATCH_RECORD_JOINED_REQUESTS = 'record-joined-requests';
/** Signals are checked with the text rule and code-point sizes, as Updates and the clients are. */
export const PATCH_TEXT_RULE_ON_SIGNALS = 'text-rule-on-signals';
/**
 * A commit that shrank the head but left it at or above the threshold names a follow-up
 * request, which the workflow queues at once (a busy lineage keeps compacting). Results of
 * earlier releases name none, so their histories never reach this patch.
 */
export const PATCH_FOLLOW_UP_COMPACTION = 'follow-up-compaction';
