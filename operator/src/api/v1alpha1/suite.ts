/** The ClinicalSuite resource (group clinicalsuite.ai, version v1alpha1, namespaced) and its types. */
import { z } from 'zod';
import { API_VERSION, KIND } from './constants.js';
import * as p from './patterns.js';
import { ModelSpecSchema, serviceSpecSchema, SuiteSpecSchema, EnvVarSchema } from './spec.js';
import { ConditionSchema, ServiceStatusSchema, SuiteStatusSchema } from './status.js';

export const SUITE_NAME_PATTERN_MESSAGE =
  'must be a DNS-1035 label (lowercase letters, digits and "-", starting with a letter): it prefixes ' +
  'Service names';
/** The suite's name is the value of its objects' instance label: at most 63 characters. */
export const MAX_SUITE_NAME_LENGTH = 63;
export const SUITE_NAME_LENGTH_MESSAGE =
  `must be at most ${MAX_SUITE_NAME_LENGTH} characters: it is the value of the objects' instance label ` +
  '(longer object names are cut and given a short hash)';

export const ObjectMetaSchema = z
  .looseObject({
    name: z
      .string()
      .max(MAX_SUITE_NAME_LENGTH, { error: SUITE_NAME_LENGTH_MESSAGE })
      .regex(p.DNS_1035_LABEL, { error: SUITE_NAME_PATTERN_MESSAGE })
      .describe('Name of the suite; prefixes the names of the objects it owns.'),
    namespace: z.string().regex(p.DNS_LABEL).optional().describe('Namespace of the suite.'),
    labels: z.record(z.string(), z.string()).optional().describe('Labels.'),
    annotations: z.record(z.string(), z.string()).optional().describe('Annotations.'),
    generation: z.int().optional().describe('Set by the API server.'),
  })
  .describe('Standard object metadata.');

export const ClinicalSuiteSchema = z
  .object({
    apiVersion: z.literal(API_VERSION).describe('clinicalsuite.ai/v1alpha1.'),
    kind: z.literal(KIND).describe('ClinicalSuite.'),
    metadata: ObjectMetaSchema,
    spec: SuiteSpecSchema.prefault({}),
    status: SuiteStatusSchema.optional(),
  })
  .describe('A suite of clinical AI services run together on Kubernetes or on one machine.');

/** A parsed ClinicalSuite: defaults applied, cross-field rules checked. */
export type ClinicalSuite = z.infer<typeof ClinicalSuiteSchema>;
export type Suite = ClinicalSuite;
/** A ClinicalSuite as written by a user (defaults not yet applied). */
export type ClinicalSuiteInput = z.input<typeof ClinicalSuiteSchema>;
export type SuiteSpec = ClinicalSuite['spec'];
export type ServiceSpec = z.infer<ReturnType<typeof serviceSpecSchema>>;
export type ModelSpec = z.infer<typeof ModelSpecSchema>;
export type EnvVar = z.infer<typeof EnvVarSchema>;
export type SuiteStatus = z.infer<typeof SuiteStatusSchema>;
export type ServiceStatus = z.infer<typeof ServiceStatusSchema>;
export type Condition = z.infer<typeof ConditionSchema>;
