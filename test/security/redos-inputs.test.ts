import { performance } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import { hfResolveUrl } from '../../services/kit/src/models/sources.js';
import { withoutTrailingSlashes } from '../../services/kit/src/urls.js';
import { CONTEXT_OVERFLOW } from '../../services/agent/src/adapters/upstream-error-body.js';
import { parseCodeSelection } from '../../services/agent/src/domain/pipelines.js';
import { AbbreviationTable } from '../../services/codesearch/src/domain/abbreviations.js';
import { LexicalIndex } from '../../services/codesearch/src/domain/lexical-index.js';
import { withoutEcho } from '../../services/patient-sim/src/domain/turn.js';
import { locateSpan } from '../../services/reasoning/src/extract/llm.js';
import { foldText } from '../../services/reasoning/src/extract/text.js';
import { parseHpoa } from '../../services/reasoning/src/kb/hpoa.js';
import { splitSentences } from '../../services/tts/src/domain/text.js';

/**
 * The inputs that made the services' regexes backtrack (issue 28; redos.test.ts finds such regexes,
 * these are the attacks on the ones it found), through the functions that run them. Each took from
 * half a second to over ten seconds before its fix; each is linear now, so a generous bound of
 * 200 ms (milliseconds on an idle machine) fails on the old code and never on a loaded CI machine.
 */

const BOUND_MS = 200;

function timed<T>(f: () => T): { value: T; ms: number } {
  const started = performance.now();
  const value = f();
  return { value, ms: performance.now() - started };
}

describe('hostile input to the regexes fixed for issue 28', () => {
  it("agent: an upstream's error body of many `input token count` without `exceeds`", () => {
    const { value, ms } = timed(() => CONTEXT_OVERFLOW.test('input token count '.repeat(8000)));
    expect(value).toBe(false);
    expect(ms).toBeLessThan(BOUND_MS);
    expect(CONTEXT_OVERFLOW.test('The input token count (5000) exceeds the maximum number of tokens')).toBe(
      true,
    );
  });

  it('agent: a code-selection reply of a fence then a long run of blanks', () => {
    const { value, ms } = timed(() => parseCodeSelection(`\`\`\`${' '.repeat(3000)}x`, []));
    expect(value.selected).toEqual([]);
    expect(ms).toBeLessThan(BOUND_MS);
    expect(parseCodeSelection('```json\n{"codes": []}\n```', []).error).toBeNull();
  });

  it('tts: a long run of `!` not followed by white space', () => {
    const { value, ms } = timed(() => splitSentences(`Xin chào${'!'.repeat(20_000)}x`));
    expect(value).toHaveLength(1);
    expect(ms).toBeLessThan(BOUND_MS);
    expect(splitSentences('Một câu. Hai câu!! Ba?').map((s) => s.terminator)).toEqual(['.', '!', '?']);
  });

  it('codesearch: a query word of many punctuation characters between letters', () => {
    const index = new LexicalIndex([]);
    const { ms } = timed(() => index.analyze(`a${'-'.repeat(30_000)}a`, new AbbreviationTable([])));
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('reasoning: an LLM span of a long run of blanks inside words', () => {
    const text = foldText('Bệnh nhân sốt cao');
    const { value, ms } = timed(() => locateSpan(text, `x${' '.repeat(30_000)}x`));
    expect(value).toBeNull();
    expect(ms).toBeLessThan(BOUND_MS);
    expect(locateSpan(text, ' sốt cao. ')).toEqual({ start: 10, end: 17 });
  });

  it('reasoning: an annotation file whose header line is a long run of tabs', () => {
    const { ms } = timed(() => parseHpoa(`#${'\t'.repeat(30_000)}\n#description: x\n`));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(parseHpoa('#  version: 2025-01-01\n').header).toEqual({ version: '2025-01-01' });
  });

  it('patient-sim: a reply echoing the instructions, with long runs of blanks and line breaks', () => {
    const reply = `I have a headache.${'\t'.repeat(3000)}${'\n'.repeat(3000)}x`;
    const { value, ms } = timed(() => withoutEcho(reply, ['I have a headache.']));
    expect(value).toBe('x');
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it('kit: a model endpoint of a long run of slashes', () => {
    const spec = {
      kind: 'hf',
      uri: 'hf://o/r/f',
      owner: 'o',
      repo: 'r',
      path: 'f',
      revision: 'main',
    } as const;
    const endpoint = `http://h${'/'.repeat(30_000)}x/`;
    const { value, ms } = timed(() => hfResolveUrl(spec, { HF_ENDPOINT: endpoint }));
    expect(value).toBe(`http://h${'/'.repeat(30_000)}x/o/r/resolve/main/f`);
    expect(ms).toBeLessThan(BOUND_MS);
    expect(withoutTrailingSlashes('http://llm:8000/v1//')).toBe('http://llm:8000/v1');
    expect(withoutTrailingSlashes('///')).toBe('');
  });
});
