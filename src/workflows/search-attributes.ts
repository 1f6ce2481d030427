/**
 * Custom search attributes shown and queryable in the Temporal Web UI, e.g.
 * `SessionHead = "abc--g3"` or `SessionSource = "discord"`. The dev stack and the
 * production setup register them (see SEARCH_ATTRIBUTE_FLAGS).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SessionLineage = defineSearchAttributeKey('SessionLineage', SearchAttributeType.KEYWORD);
export const SessionHead = defineSearchAttributeKey('SessionHead', SearchAttributeType.KEYWORD);
export const SessionSource = defineSearchAttributeKey('SessionSource', SearchAttributeType.KEYWORD);
export const CompactionCount = defineSearchAttributeKey('CompactionCount', SearchAttributeType.INT);

/** As `temporal server start-dev --search-attribute` and `temporal operator search-attribute create` take them. */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'Int'> = {
  SessionLineage: 'Keyword',
  SessionHead: 'Keyword',
  SessionSource: 'Keyword',
  CompactionCount: 'Int',
};
