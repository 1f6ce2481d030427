/**
 * The text that gives a summary message its structure: the summary marker it opens with, the
 * ledger's heading, its section headings and its closing line. Only the service writes them:
 * text a summary carries from elsewhere (the summariser's prose, a caller's focus topic) may
 * not hold them, so that nothing but the ledger reads as the ledger. A focus topic that holds
 * one is refused (InvalidInputError); the summariser's prose has each replaced by a notice.
 * Plain data and regular expressions: safe to import from workflow code (the compact Update's
 * validator checks the focus topic with it). Pure.
 */
import { SUMMARY_PREFIX } from './messages';

/** The line that opens the ledger in a summary: the planner splits a previous summary's prose from its ledger here. */
export const LEDGER_HEADING = '## Ledger (kept by session-compaction from the summarised messages, verbatim where quoted)';
/** The headings of the ledger's sections, in the order they are rendered. */
export const LEDGER_SECTIONS = {
  requests: "User requests, oldest first (R<n>: the message's place in the session):",
  files: 'Files (last action):',
  commands: 'Commands (last outcome):',
  errors: 'Errors not yet resolved:',
  plan: 'Plan, latest, verbatim',
  background: 'Background work still running:',
  queued: 'User turns not yet answered, oldest first:',
  instructions: 'Standing instructions, verbatim:',
  identifiers: 'Identifiers the user named:',
  folded: 'Folded into counts to fit (oldest and resolved first):',
} as const;
/** What makes each section heading one: matched where it opens a line. */
const SECTION_STEMS = [
  'User requests, oldest first',
  'Files (last action)',
  'Commands (last outcome)',
  'Errors not yet resolved',
  'Plan, latest, verbatim',
  'Background work still running',
  'User turns not yet answered',
  'Standing instructions, verbatim',
  'Identifiers the user named',
  'Folded into counts to fit',
];
/** The ledger's closing line. */
export const LEDGER_END = '(end of ledger)';

/** White space and the invisible format characters that may stand between the words of a phrase. */
const GAP = String.raw`[\s\u00AD\u180E\u200B-\u200F\u2060-\u2064\uFEFF]`;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A phrase matched case-insensitively, any run of white space or format characters between its words. */
const phrase = (text: string) => text.trim().split(/\s+/).map(escape).join(`${GAP}+`);

interface Reserved {
  what: string;
  pattern: RegExp;
}

/**
 * The marker, the ledger heading and the closing line anywhere; a section heading where it
 * opens a line (after white space or Markdown marks), which is where it acts as one.
 */
const RESERVED: Reserved[] = [
  { what: 'the summary marker', pattern: new RegExp(phrase(SUMMARY_PREFIX), 'giu') },
  { what: 'the ledger heading', pattern: new RegExp(phrase('Ledger (kept by session-compaction'), 'giu') },
  { what: "the ledger's closing line", pattern: new RegExp(phrase(LEDGER_END), 'giu') },
  ...SECTION_STEMS.map((stem) => ({
    what: `the ledger heading "${stem}"`,
    pattern: new RegExp(String.raw`(?<=^|[\n\r\v\f\u0085\u2028\u2029])((?:${GAP}|[#*_>-])*)${phrase(stem)}`, 'giu'),
  })),
];

/** What of a summary's structure a text holds (`the summary marker`, `the ledger heading "Files"`, ...), or undefined when none. */
export function reservedTextIn(text: string): string | undefined {
  for (const { what, pattern } of RESERVED) {
    pattern.lastIndex = 0;
    if (pattern.test(text)) return what;
  }
  return undefined;
}

/** The text with each piece of a summary's structure it holds replaced by a notice that something was removed. */
export function withoutReservedText(text: string): string {
  let out = text;
  for (const { what, pattern } of RESERVED) {
    out = out.replace(pattern, (...args: unknown[]) => {
      // A section heading keeps what opened its line (the lookbehind's group); the others have none.
      const lead = typeof args[1] === 'string' ? args[1] : '';
      return `${lead}[removed: ${what}]`;
    });
  }
  return out;
}
