import type { ConcreteIntent, UpstreamId } from './types.js';

/**
 * Which LLM upstream a call tries first, and then which: pure. `alpha4_service` is the primary and
 * `beta_service` its fallback; code and debugging go to `beta3_service` (the reasoning and code model)
 * first. A forced upstream (`force_llm`, chat-completions `model`) comes first and the others stay as
 * fallbacks. Only configured upstreams appear.
 */

const GENERAL: readonly UpstreamId[] = ['alpha4_service', 'beta_service', 'beta3_service'];
const CODE: readonly UpstreamId[] = ['beta3_service', 'alpha4_service', 'beta_service'];
const CODE_INTENTS: ReadonlySet<ConcreteIntent> = new Set(['code', 'debug']);

export function upstreamOrder(
  intent: ConcreteIntent,
  prefer: UpstreamId | null,
  configured: readonly UpstreamId[],
): UpstreamId[] {
  const base = CODE_INTENTS.has(intent) ? CODE : GENERAL;
  const order = prefer === null ? base : [prefer, ...base.filter((id) => id !== prefer)];
  return order.filter((id) => configured.includes(id));
}
