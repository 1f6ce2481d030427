/**
 * Pieces every dialect shares: the summary marker, group building from call/result links,
 * and small shape checks. Pure: safe for workflow code.
 */
import { isJsonObject, type JsonValue } from '../json';
import { SUMMARY_PREFIX } from '../messages';
import { codePointLength, cutText, markerText } from '../text';
import type { FieldProblem, MessageGroup } from './types';

export { SUMMARY_PREFIX };

/** The acknowledgement that follows a summary in dialects whose turns alternate, when a user turn comes next. */
export const SUMMARY_ACK_TEXT = `${SUMMARY_PREFIX}\nUnderstood. I will continue from this summary.`;

/** Whether text carries the summary marker once leading white space and format characters are removed. */
export const carriesMarker = (text: string): boolean => markerText(text).startsWith(SUMMARY_PREFIX);

/** A tool call found in a transcript and the positions of the results that answer it. */
export interface CallLink {
  at: number;
  id: string;
  answeredAt: number[];
}

/**
 * Groups from links: every call is grouped with its results (and everything between), every
 * `join` [from, to] makes one group of that span; overlapping spans merge. A group holding an
 * orphan result is marked orphan; its unanswered ids are its calls without a result.
 */
export function buildGroups(
  count: number,
  calls: readonly CallLink[],
  orphans: readonly number[],
  joins: ReadonlyArray<readonly [number, number]> = [],
): MessageGroup[] {
  // reach[i]: the last position that must share a group with position i.
  const reach = Array.from({ length: count }, (_, i) => i);
  const extend = (from: number, to: number) => {
    if (from < 0 || to >= count || to <= from) return;
    reach[from] = Math.max(reach[from], to);
  };
  for (const call of calls) for (const r of call.answeredAt) extend(call.at, r);
  for (const [from, to] of joins) extend(from, to);
  const groups: MessageGroup[] = [];
  let start = 0;
  while (start < count) {
    let end = reach[start];
    for (let i = start; i <= end; i++) end = Math.max(end, reach[i]);
    groups.push({ indices: Array.from({ length: end - start + 1 }, (_, k) => start + k), unanswered: [], orphan: false });
    start = end + 1;
  }
  const groupAt = new Map<number, MessageGroup>();
  for (const g of groups) for (const i of g.indices) groupAt.set(i, g);
  for (const call of calls) if (call.answeredAt.length === 0) groupAt.get(call.at)!.unanswered.push(call.id);
  for (const o of orphans) groupAt.get(o)!.orphan = true;
  return groups;
}

/** The calls still open at the end: those of the last calling group, if it is unanswered. */
export function openCallsOf(groups: readonly MessageGroup[], calls: readonly CallLink[]): { index: number; ids: string[] } | undefined {
  const last = groups[groups.length - 1];
  if (!last || last.unanswered.length === 0) return undefined;
  const open = calls.filter((c) => c.answeredAt.length === 0 && last.indices.includes(c.at));
  if (open.length === 0) return undefined;
  return { index: open[0].at, ids: open.map((c) => c.id) };
}

export function checkString(value: unknown, field: string, min = 0, max = Infinity): FieldProblem | undefined {
  if (typeof value !== 'string' || codePointLength(value) < min || codePointLength(value) > max) {
    return { field, detail: max === Infinity ? `must be a string${min > 0 ? ' that is not empty' : ''}` : `must be a string of ${min} to ${max} characters` };
  }
  return undefined;
}

export function objectProblem(value: unknown, field: string): FieldProblem | undefined {
  return isJsonObject(value) ? undefined : { field, detail: 'must be an object' };
}

/** A short placeholder for a non-text part (image, audio, file, document) as the summariser sees it. */
export function mediaPlaceholder(part: Record<string, JsonValue>): string {
  const type = String(part.type ?? 'part');
  const name =
    (isJsonObject(part.file) && (part.file.filename ?? part.file.file_id)) ||
    part.filename ||
    part.file_id ||
    (isJsonObject(part.source) && (part.source.media_type ?? part.source.type)) ||
    (isJsonObject(part.inlineData) && part.inlineData.mimeType) ||
    (isJsonObject(part.fileData) && (part.fileData.fileUri ?? part.fileData.mimeType));
  return `[${type}${name ? `: ${String(name)}` : ''}]`;
}

/** Text cut for the summariser's prompt, on a grapheme boundary, with a visible note of what was left out. */
export function clip(text: string, cap: number, what = 'this tool result'): string {
  if (text.length <= cap) return text;
  const kept = cutText(text, cap);
  return `${kept} [... ${text.length - kept.length} more characters of ${what} not shown]`;
}

/** The value as text for the summariser: strings as they are, anything else as JSON. */
export const asText = (value: JsonValue | undefined): string => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));
