/**
 * The one list of dialects, and for each where its parts live in every language. Adding a
 * dialect is adding an entry here and the parts it names (docs/dialects.md, "Adding a
 * dialect"); test/stack/dialect-registry.test.ts fails while any part is missing. Plain data,
 * no imports: the dialect names (./types), the schema and the CLI read it. Pure: safe for
 * workflow code.
 */
export interface DialectEntry {
  /** The name a lineage is created with (the `dialects` table's key, `lineages.dialect`). */
  readonly name: string;
  /** The TypeScript module (from the repository root) and the name of its `Dialect` export. */
  readonly module: string;
  readonly export: string;
  /** The SQL function (src/db/functions/<name>.sql) that checks one message at append: `sc_<dialect>_problem`. */
  readonly sqlProblem: string;
  /** The key of the dialect's rules in the Python client (clients/python/session_compaction/dialects.py, RULES). */
  readonly pythonRules: string;
  /** The contract vectors file with rows for the dialect (each case's `dialect`). */
  readonly vectors: string;
  /** The strict fake provider (test/support) and the exports a test reaches it by: its request validator and its server. */
  readonly strictFake: { readonly module: string; readonly exports: readonly string[] };
  /** The message field a forged summary marker is reported at. */
  readonly summaryMarkerField: 'content' | 'parts';
  /** A message `name` reserved for the summaries this service writes, when the dialect has one. */
  readonly reservedName?: string;
}

const VECTORS = 'contract/vectors/dialect-rules.json';

export const DIALECT_REGISTRY = [
  {
    name: 'openai-chat',
    module: 'src/compaction/dialects/openai-chat.ts',
    export: 'openaiChat',
    sqlProblem: 'sc_openai_chat_problem',
    pythonRules: 'openai-chat',
    vectors: VECTORS,
    strictFake: { module: 'test/support/strict-provider.ts', exports: ['validateChatRequest', 'startStrictProvider'] },
    summaryMarkerField: 'content',
    reservedName: 'context_summary',
  },
  {
    name: 'openai-responses',
    module: 'src/compaction/dialects/openai-responses.ts',
    export: 'openaiResponses',
    sqlProblem: 'sc_openai_responses_problem',
    pythonRules: 'openai-responses',
    vectors: VECTORS,
    strictFake: { module: 'test/support/strict-responses.ts', exports: ['validateResponsesRequest', 'startStrictResponses'] },
    summaryMarkerField: 'content',
  },
  {
    name: 'openai-agents',
    module: 'src/compaction/dialects/openai-agents.ts',
    export: 'openaiAgents',
    sqlProblem: 'sc_openai_agents_problem',
    pythonRules: 'openai-agents',
    vectors: VECTORS,
    strictFake: { module: 'test/support/agents-items.ts', exports: ['sdkRefusal', 'sdkRequestInput'] },
    summaryMarkerField: 'content',
  },
  {
    name: 'anthropic',
    module: 'src/compaction/dialects/anthropic.ts',
    export: 'anthropic',
    sqlProblem: 'sc_anthropic_problem',
    pythonRules: 'anthropic',
    vectors: VECTORS,
    strictFake: { module: 'test/support/strict-anthropic.ts', exports: ['validateAnthropicRequest', 'startStrictAnthropic'] },
    summaryMarkerField: 'content',
  },
  {
    name: 'gemini',
    module: 'src/compaction/dialects/gemini.ts',
    export: 'gemini',
    sqlProblem: 'sc_gemini_problem',
    pythonRules: 'gemini',
    vectors: VECTORS,
    strictFake: { module: 'test/support/strict-gemini.ts', exports: ['validateGeminiRequest', 'startStrictGemini'] },
    summaryMarkerField: 'parts',
  },
  {
    name: 'ai-sdk',
    module: 'src/compaction/dialects/ai-sdk.ts',
    export: 'aiSdk',
    sqlProblem: 'sc_ai_sdk_problem',
    pythonRules: 'ai-sdk',
    vectors: VECTORS,
    strictFake: { module: 'test/support/strict-ai-sdk.ts', exports: ['aiSdkRefusal', 'aiSdkRequests'] },
    summaryMarkerField: 'content',
  },
] as const satisfies readonly DialectEntry[];

export type RegisteredDialectName = (typeof DIALECT_REGISTRY)[number]['name'];

/** The registry's entries as the `dialects` table holds them (migration 0019 seeds the first five rows, 0020 the ai-sdk row). */
export const dialectRows = () =>
  DIALECT_REGISTRY.map((entry: DialectEntry, i) => ({
    name: entry.name,
    position: i + 1,
    problemFunction: entry.sqlProblem,
    summaryMarkerField: entry.summaryMarkerField,
    reservedName: entry.reservedName ?? null,
  }));

/** The dialect names as a usage text lists the choices: `openai-chat|openai-responses|…`. */
export const dialectChoices = (separator = '|') => DIALECT_REGISTRY.map((entry) => entry.name).join(separator);
