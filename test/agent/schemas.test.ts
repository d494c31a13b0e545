import { describe, expect, it } from '@jest/globals';
import { OcrFormSchema, TranscribeFormSchema } from '../../services/agent/src/schemas/subservices.js';

// Multipart booleans as clients send them: a Python client's form sends True/False.

describe('multipart booleans', () => {
  it.each([
    ['true', true],
    ['True', true],
    ['TRUE', true],
    ['1', true],
    ['Yes', true],
    ['on', true],
    ['false', false],
    ['False', false],
    ['0', false],
    ['NO', false],
    ['off', false],
  ])('%s is %s', (value, expected) => {
    expect(OcrFormSchema.parse({ analyze: value, search: value })).toMatchObject({
      analyze: expected,
      search: expected,
    });
    expect(TranscribeFormSchema.parse({ analyze: value })).toMatchObject({ analyze: expected });
  });

  it('defaults when absent and refuses anything else, naming the field', () => {
    expect(OcrFormSchema.parse({})).toMatchObject({ analyze: false, search: false });
    const bad = OcrFormSchema.safeParse({ analyze: 'maybe' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues).toEqual([
      expect.objectContaining({ path: ['analyze'], message: 'must be true or false' }),
    ]);
  });
});
