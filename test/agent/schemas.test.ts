import { describe, expect, it } from '@jest/globals';
import { RunRequestSchema, SessionIdSchema } from '../../services/agent/src/schemas/api.js';
import {
  OcrFormSchema,
  PipelineFormSchema,
  TranscribeFormSchema,
} from '../../services/agent/src/schemas/subservices.js';
import { SessionIdSchema as SimSessionIdSchema } from '../../services/patient-sim/src/schemas/api.js';

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

// A patient_sim turn hands the agent's session id to the patient simulator as its own: every id the
// agent takes must be one the simulator takes, or /run answers the simulator's 422.
describe('session ids', () => {
  const ids = [
    'a',
    '7',
    'ward-3.bed:7_a',
    'd7c5088e-4d49-4287-98a8-8a5f8e73ef3b',
    'x'.repeat(128),
    'x'.repeat(129),
    '.hidden',
    '_private',
    ':scoped',
    '-dash',
    'a b',
    'bệnh-nhân',
    '',
  ];
  it.each(ids)('%j: the agent takes it only when the patient simulator does', (id) => {
    expect(SessionIdSchema.safeParse(id).success).toBe(SimSessionIdSchema.safeParse(id).success);
  });

  it('refuses one starting with . _ : or -, naming session_id', () => {
    for (const id of ['.hidden', '_private', ':scoped', '-dash']) {
      const parsed = RunRequestSchema.safeParse({ message: 'hi', session_id: id });
      expect(parsed.error?.issues).toEqual([expect.objectContaining({ path: ['session_id'] })]);
    }
  });
});

// An HTML form sends every field, empty when left blank: a blank language is the default, as on
// /run/multipart, not a 422.
describe('multipart language', () => {
  it.each(['', '  '])('%j is the default vi on every form', (blank) => {
    expect(TranscribeFormSchema.parse({ language: blank }).language).toBe('vi');
    expect(OcrFormSchema.parse({ language: blank }).language).toBe('vi');
    expect(PipelineFormSchema.parse({ language: blank }).language).toBe('vi');
  });

  it('still refuses a language it does not know', () => {
    expect(OcrFormSchema.safeParse({ language: 'fr' }).success).toBe(false);
    expect(TranscribeFormSchema.parse({ language: 'en' }).language).toBe('en');
  });
});
