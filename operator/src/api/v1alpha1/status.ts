/** `status` of the ClinicalSuite resource, written by the operator through the status subresource. */
import { z } from 'zod';
import { COMPONENT_KEYS, type ComponentKey } from './components.js';
import * as p from './patterns.js';

/** The shape of metav1.Condition. */
export const ConditionSchema = z
  .object({
    type: z.string().min(1).max(316).describe('Condition type: Ready, Progressing or Degraded.'),
    status: z.enum(['True', 'False', 'Unknown']).describe('Status of the condition.'),
    observedGeneration: z.int().min(0).optional().describe('Generation the condition was computed from.'),
    lastTransitionTime: z.iso.datetime().describe('Last time the status changed.'),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(p.CONDITION_REASON)
      .describe('CamelCase reason of the last transition.'),
    message: z.string().max(32_768).describe('Human-readable message that names the root cause.'),
  })
  .describe('A condition (metav1.Condition).');

const conditions = z
  .array(ConditionSchema)
  .max(16)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });

export const ServiceStatusSchema = z
  .object({
    ready: z.boolean().describe('Whether every replica is ready.'),
    replicas: z.int().min(0).optional().describe('Replicas that exist.'),
    readyReplicas: z.int().min(0).optional().describe('Replicas that are ready.'),
    endpoint: z.string().optional().describe('In-cluster base URL of the service.'),
    conditions: conditions.optional().describe('Ready, Progressing and Degraded of this service.'),
  })
  .describe('Observed state of one service.');

export const SuiteStatusSchema = z
  .object({
    observedGeneration: z.int().min(0).optional().describe('Generation of the spec the status reflects.'),
    conditions: conditions.optional().describe('Ready, Progressing and Degraded of the suite.'),
    servicesReady: z.int().min(0).optional().describe('Enabled services that are ready.'),
    servicesTotal: z.int().min(0).optional().describe('Enabled services.'),
    ready: z.string().optional().describe('servicesReady/servicesTotal, e.g. 3/5 (printer column).'),
    services: z
      .object(
        Object.fromEntries(COMPONENT_KEYS.map((key) => [key, ServiceStatusSchema.optional()])) as {
          [K in ComponentKey]: z.ZodOptional<typeof ServiceStatusSchema>;
        },
      )
      .optional()
      .describe('Observed state per enabled service.'),
  })
  .describe('Observed state of a ClinicalSuite.');
