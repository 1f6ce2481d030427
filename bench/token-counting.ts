/**
 * What real token counting adds to an append: the tokenizer appends use for OpenAI models
 * (gpt-tokenizer through tokenCounterFor) against the estimate, per message of the example
 * conversation, on this process's CPU. Part of `npm run bench`; alone: `npx tsx bench/token-counting.ts`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChatMessage } from '../src/compaction/messages';
import { tokenCounterFor } from '../src/compaction/token-counter';
import { estimateTokens } from '../src/compaction/tokens';
import { PROJECT_ROOT } from '../src/config';

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export function measureTokenCounting(model = 'gpt-4o') {
  const example = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'examples/conversation.json'), 'utf8')) as ChatMessage[];
  const counter = tokenCounterFor(model);
  const perMessageUs = (fn: (m: ChatMessage) => number) => {
    for (const m of example) fn(m); // warm (loads the encoding once)
    const reps = 20;
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) for (const m of example) fn(m);
    return round(((performance.now() - t0) * 1000) / (reps * example.length));
  };
  const real = example.map((m) => counter.count(m));
  const estimated = example.map((m) => estimateTokens(m));
  return {
    messages: example.length,
    tokenizer: counter.tokenizer,
    estimateUsPerMessage: perMessageUs((m) => estimateTokens(m)),
    realUsPerMessage: perMessageUs((m) => counter.count(m)),
    estimateOverRealTokens: round(estimated.reduce((a, b) => a + b, 0) / real.reduce((a, b) => a + b, 0)),
  };
}

if (require.main === module) console.log(JSON.stringify(measureTokenCounting()));
