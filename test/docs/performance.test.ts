/**
 * docs/performance.md quotes one benchmark run: every figure in the tables of its Results
 * section must be in that run's JSON, bench/results/published.json (committed), so no figure
 * in the doc can drift from, or be made up apart from, a real run.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const doc = readFileSync(path.join(PROJECT_ROOT, 'docs/performance.md'), 'utf8');
const published = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'bench/results/published.json'), 'utf8'));

/** Every number in the JSON, including the keys (sizes such as 10000 are keys) and numbers inside strings. */
function numbersIn(value: unknown, out: number[] = []): number[] {
  if (typeof value === 'number') out.push(value);
  else if (typeof value === 'string') for (const m of value.matchAll(/-?\d+(?:\.\d+)?/g)) out.push(Number(m[0]));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (/^\d+$/.test(k)) out.push(Number(k));
      numbersIn(v, out);
    }
  }
  return out;
}

/** The figures of the value columns (all but the first) of every table in the Results section. */
function figuresOfResults(markdown: string): Array<{ row: string; figure: string }> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Results'));
  if (!section) return [];
  const figures: Array<{ row: string; figure: string }> = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    for (const cell of cells.slice(1)) {
      // A thousands separator is a display choice: 10,000 is 10000.
      for (const m of cell.replace(/(\d),(\d{3})/g, '$1$2').matchAll(/-?\d+(?:\.\d+)?/g)) figures.push({ row: cells[0], figure: m[0] });
    }
  }
  return figures;
}

function missingFigures(markdown: string, numbers: number[]) {
  return figuresOfResults(markdown).filter(({ figure }) => {
    const decimals = figure.split('.')[1]?.length ?? 0;
    const x = Number(figure);
    return !numbers.some((v) => Number(v.toFixed(decimals)) === x);
  });
}

describe('docs/performance.md', () => {
  const numbers = numbersIn(published);
  const figures = figuresOfResults(doc);

  it('quotes a table of results', () => {
    expect(figures.length).toBeGreaterThan(20);
  });

  it('has every figure of its results tables in bench/results/published.json', () => {
    expect(missingFigures(doc, numbers)).toEqual([]);
  });

  it('catches a figure that is not in the file, at the precision printed', () => {
    const table = (value: string) => `## Results\n\n| measure | value |\n| --- | --- |\n| x | ${value} |\n\n## Next\n`;
    expect(missingFigures(table('41.94 ms'), [41.94])).toEqual([]);
    expect(missingFigures(table('10,000 lineages'), [10000])).toEqual([]);
    expect(missingFigures(table('41.9 ms'), [41.94])).toEqual([]);
    expect(missingFigures(table('41.95 ms'), [41.94])).toEqual([{ row: 'x', figure: '41.95' }]);
  });
});
