/**
 * The config hash on pod templates (`clinicalsuite.ai/config-hash`, prometheus-operator's
 * input-hash idea): sha256 of the stable JSON of what the pods read at start, so changing it
 * rolls them and nothing else does. Pure: node:crypto's hash is a function of its input.
 */
import { createHash } from 'node:crypto';
import { stableJson } from './stable.js';

export function configHash(input: unknown): string {
  return createHash('sha256').update(stableJson(input)).digest('hex');
}
