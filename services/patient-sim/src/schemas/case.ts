import { z } from 'zod';
import { diagnosisTerms, findLeak } from '../domain/leak.js';

/**
 * A case file: one simulated patient, as data. JSON under `services/patient-sim/cases/` (shipped)
 * or PATIENT_CASES_DIR (the user's), validated with this schema at start-up.
 *
 * What the patient knows about themself are `facts` (in the patient's own words, in the case's
 * language); what only a clinician can learn by examining or testing are `findings` (returned as
 * structured results, never spoken by the patient); the `diagnosis` is the answer key and never
 * reaches the language model. Every fact and finding names the `topics` (Vietnamese and English
 * keywords) that make it askable.
 */

export const LANGUAGES = ['vi', 'en'] as const;
export const LanguageSchema = z.enum(LANGUAGES);
export type Language = z.infer<typeof LanguageSchema>;

const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lowercase letters, digits and "-", at most 64 characters');

const keyword = z
  .string()
  .trim()
  .min(2, 'a keyword has at least 2 characters')
  .max(80)
  .refine((s) => /[\p{L}\p{N}]/u.test(s), 'a keyword needs a letter or a digit');

export const TopicsSchema = z
  .strictObject({
    vi: z.array(keyword).min(1, 'at least one Vietnamese keyword'),
    en: z.array(keyword).min(1, 'at least one English keyword'),
  })
  .describe('Keywords (Vietnamese and English) that make the item askable; matched without diacritics');

export const FACT_CATEGORIES = [
  'present_illness',
  'symptom',
  'past_history',
  'medication',
  'allergy',
  'social_history',
  'family_history',
] as const;
export const FactCategorySchema = z.enum(FACT_CATEGORIES);
export type FactCategory = z.infer<typeof FactCategorySchema>;

export const FactSchema = z.strictObject({
  id: slug,
  category: FactCategorySchema,
  text: z
    .string()
    .trim()
    .min(3)
    .max(1000)
    .describe('What the patient knows and may say, in the case language, first person'),
  topics: TopicsSchema,
});
export type Fact = z.infer<typeof FactSchema>;

export const FINDING_KINDS = ['vital_sign', 'examination', 'investigation'] as const;
export const FindingKindSchema = z.enum(FINDING_KINDS);
export type FindingKind = z.infer<typeof FindingKindSchema>;

export const FindingSchema = z.strictObject({
  id: slug,
  kind: FindingKindSchema,
  name: z.string().trim().min(2).max(200).describe('What was examined, measured or tested'),
  result: z.string().trim().min(1).max(1000).describe('The result as a clinician would record it'),
  value: z.number().optional(),
  unit: z.string().trim().min(1).max(40).optional(),
  reference_range: z.string().trim().min(1).max(100).optional(),
  topics: TopicsSchema,
});
export type Finding = z.infer<typeof FindingSchema>;

export const DemographicsSchema = z.strictObject({
  name: z.string().trim().min(1).max(100),
  age: z.number().int().min(0).max(120),
  sex: z.enum(['female', 'male']),
  occupation: z.string().trim().min(1).max(200),
});

export const PersonaSchema = z.strictObject({
  personality: z.string().trim().min(3).max(1000),
  speech_style: z.string().trim().min(3).max(1000),
  unsure_reply: z
    .string()
    .trim()
    .min(3)
    .max(300)
    .describe(
      'What the patient says, in the case language, when a reply had to be withdrawn because it named the diagnosis',
    ),
});

export const DiagnosisSchema = z.strictObject({
  name: z.string().trim().min(2).max(200),
  icd10: z.string().regex(/^[A-Z][0-9]{2}(\.[0-9A-Z]{1,4})?$/, 'an ICD-10 code such as A97.1 or I21.4'),
  aliases: z
    .array(z.string().trim().min(2).max(200))
    .min(1)
    .describe('Other names in both languages (the reply check refuses any of them)'),
});

export const SourceSchema = z.strictObject({
  title: z.string().trim().min(3).max(400),
  url: z.url({ protocol: /^https?$/ }).optional(),
  note: z.string().trim().max(400).optional(),
});

export const CaseSchema = z
  .strictObject({
    schema_version: z.literal(1),
    id: slug,
    language: LanguageSchema,
    title: z.string().trim().min(3).max(200),
    demographics: DemographicsSchema,
    chief_complaint: z
      .string()
      .trim()
      .min(3)
      .max(1000)
      .describe('Why the patient came, in their words: always known to the model'),
    persona: PersonaSchema,
    facts: z.array(FactSchema).min(3),
    findings: z.array(FindingSchema),
    diagnosis: DiagnosisSchema,
    sources: z.array(SourceSchema).min(1),
  })
  .superRefine((c, ctx) => {
    const seen = new Map<string, string>();
    const check = (id: string, path: (string | number)[]): void => {
      const other = seen.get(id);
      if (other !== undefined)
        ctx.addIssue({ code: 'custom', path, message: `duplicate id "${id}" (also ${other})` });
      else seen.set(id, path.join('.'));
    };
    c.facts.forEach((f, i) => check(f.id, ['facts', i, 'id']));
    c.findings.forEach((f, i) => check(f.id, ['findings', i, 'id']));
    // What reaches the model must not name the diagnosis.
    const terms = diagnosisTerms(c.diagnosis);
    // The id and title are shown to the trainee (GET /patients) and the rest is given to the model.
    const spoken: [string, (string | number)[]][] = [
      [c.id, ['id']],
      [c.title, ['title']],
      [c.chief_complaint, ['chief_complaint']],
      [c.persona.personality, ['persona', 'personality']],
      [c.persona.speech_style, ['persona', 'speech_style']],
      [c.persona.unsure_reply, ['persona', 'unsure_reply']],
      [c.demographics.occupation, ['demographics', 'occupation']],
      ...c.facts.map((f, i): [string, (string | number)[]] => [f.text, ['facts', i, 'text']]),
    ];
    for (const [text, path] of spoken) {
      const term = findLeak(text, terms);
      if (term !== null)
        ctx.addIssue({
          code: 'custom',
          path,
          message: `names the diagnosis ("${term}"); this text is shown to the trainee or given to the model`,
        });
    }
  });
export type CaseFile = z.infer<typeof CaseSchema>;
