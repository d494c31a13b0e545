import {
  BadGatewayError,
  ConfigError,
  HttpClient,
  errorCause,
  loggableUrl,
  withoutTrailingSlashes,
  type KitMetrics,
} from '@clinicalsuite/kit';
import type { ChatBackend } from '@clinicalsuite/kit/llm';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { TaskAgentConfig } from '../config.js';
import { validateSkills, type AnySkill, type Skill, type SkillContext } from '../domain/skills.js';

/**
 * The skills this agent offers, each calling a suite service over HTTP (the kit's HttpClient) or the
 * LLM. A skill whose service is not configured is not offered, so the LLM never plans with a tool
 * that cannot work.
 */

export interface SkillsConfig {
  readonly codeSearchUrl?: string | undefined;
  /** The bearer token the code search accepts (its CODE_SEARCH_API_TOKEN). */
  readonly codeSearchToken?: string | undefined;
  readonly reasoningUrl?: string | undefined;
  /** The bearer token the reasoning engine accepts (its REASONING_API_TOKEN). */
  readonly reasoningToken?: string | undefined;
  /** Services `check_service` may ask for /health, by name. */
  readonly services: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly llm: ChatBackend;
  /** The model name sent to the LLM (resolved when the skill runs). */
  readonly model: () => string;
  /** The service's metrics, where the skills' calls are counted per service. */
  readonly metrics?: KitMetrics | Registry | undefined;
}

/**
 * One suite service a skill calls: JSON in and out, the skill's deadline and the task's signal. The
 * client is made on first use, so a URL it cannot take fails the call, not the agent's start.
 */
class ServiceCaller {
  #client: HttpClient | undefined;

  constructor(
    private readonly name: string,
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
    private readonly token?: string,
    private readonly metrics?: KitMetrics | Registry,
  ) {}

  async call(
    path: string,
    init: { method: 'GET' | 'POST'; body?: unknown },
    ctx: SkillContext,
  ): Promise<{ status: number; body: unknown }> {
    let where = loggableUrl(`${withoutTrailingSlashes(this.baseUrl)}${path}`);
    let text: string;
    let status: number;
    try {
      this.#client ??= new HttpClient({
        name: this.name,
        baseUrl: this.baseUrl,
        token: this.token,
        timeoutMs: this.timeoutMs,
        failures: {
          unreachable: (f) => new BadGatewayError(`${where} did not answer (${f.cause})`),
          timeout: () =>
            new BadGatewayError(`${where} did not answer (The operation was aborted due to timeout)`),
        },
        metrics: this.metrics,
      });
      where = loggableUrl(`${this.#client.baseUrl}${path}`);
      const res = await this.#client.request({
        method: init.method,
        path,
        ...(init.body === undefined ? {} : { json: init.body }),
        signal: ctx.signal,
      });
      text = res.text;
      status = res.status;
    } catch (error) {
      ctx.signal.throwIfAborted();
      if (error instanceof BadGatewayError) throw error;
      throw new BadGatewayError(`${where} did not answer (${errorCause(error)})`);
    }
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status, body };
  }
}

function detailOf(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 300);
  const b = body as { detail?: unknown; error?: { message?: unknown } };
  if (typeof b.detail === 'string') return b.detail.slice(0, 300);
  if (typeof b.error?.message === 'string') return b.error.message.slice(0, 300);
  return JSON.stringify(body).slice(0, 300);
}

export function searchMedicalCodesSkill(
  baseUrl: string,
  timeoutMs: number,
  token?: string,
  metrics?: KitMetrics | Registry,
): Skill<{ query: string; top_k: number }> {
  const codeSearch = new ServiceCaller('codesearch', baseUrl, timeoutMs, token, metrics);
  return {
    name: 'search_medical_codes',
    description:
      'Finds ICD-10 (and other imported) medical codes for a diagnosis, symptom or procedure written in Vietnamese or English. Answers one code and title per line.',
    service: 'codeSearch',
    input: z.object({
      query: z
        .string()
        .trim()
        .min(1)
        .max(200)
        .describe('What to look up, e.g. "tăng huyết áp" or "type 2 diabetes"'),
      top_k: z.number().int().min(1).max(10).describe('How many codes, 1 to 10'),
    }),
    run: async (input, ctx) => {
      const { status, body } = await codeSearch.call(
        '/search',
        { method: 'POST', body: { query: input.query, top_k: input.top_k } },
        ctx,
      );
      if (status !== 200) throw new BadGatewayError(`code search answered ${status}: ${detailOf(body)}`);
      const results =
        (body as { results?: { code?: unknown; title?: unknown; type?: unknown }[] }).results ?? [];
      if (results.length === 0) return `No code matches "${input.query}".`;
      return results.map((r) => `${String(r.type)} ${String(r.code)}: ${String(r.title)}`).join('\n');
    },
  };
}

export function askReasoningSkill(
  baseUrl: string,
  timeoutMs: number,
  token?: string,
  metrics?: KitMetrics | Registry,
): Skill<{ text: string }> {
  const reasoning = new ServiceCaller('reasoning', baseUrl, timeoutMs, token, metrics);
  return {
    name: 'ask_reasoning_engine',
    description:
      'Sends free clinical text (findings, history, vitals) to the clinical reasoning engine and answers its ranked differential diagnoses with probabilities.',
    service: 'reasoning',
    input: z.object({
      text: z.string().trim().min(1).max(4000).describe('The clinical findings, free text'),
    }),
    run: async (input, ctx) => {
      const { status, body } = await reasoning.call(
        '/api/v1/diagnosis',
        { method: 'POST', body: { text: input.text } },
        ctx,
      );
      if (status !== 200)
        throw new BadGatewayError(`the reasoning engine answered ${status}: ${detailOf(body)}`);
      return formatDiagnosis(body);
    },
  };
}

const namedFinding = z.object({ feature: z.string(), label_en: z.string().nullish() });
const diagnosisAnswer = z.object({
  diagnoses: z.array(
    z.object({
      rank: z.number(),
      title_en: z.string(),
      icd10: z.object({ code: z.string() }).nullish(),
      probability: z.number(),
      supporting: z.array(namedFinding),
      opposing: z.array(namedFinding),
    }),
  ),
  unknown_probability: z.number(),
  next_findings: z.array(namedFinding),
  findings: z.array(namedFinding.extend({ present: z.boolean() })),
  warnings: z.array(z.string()).optional(),
});

const labelOf = (f: z.infer<typeof namedFinding>): string => f.label_en ?? f.feature;

/**
 * The engine's answer as the few lines the planning LLM needs (ranked diagnoses with ICD-10 and
 * probability, the evidence for and against, the rest, what to ask next), not its whole JSON with
 * spans and timings. A body of another shape is passed on as it came.
 */
export function formatDiagnosis(body: unknown): string {
  const parsed = diagnosisAnswer.safeParse(body);
  if (!parsed.success) return typeof body === 'string' ? body : JSON.stringify(body);
  const answer = parsed.data;
  const lines = answer.diagnoses.map((d) => {
    const code = d.icd10 ? ` (ICD-10 ${d.icd10.code})` : '';
    const evidence = [
      d.supporting.length > 0 ? `for: ${d.supporting.map(labelOf).join(', ')}` : null,
      d.opposing.length > 0 ? `against: ${d.opposing.map(labelOf).join(', ')}` : null,
    ].filter((part) => part !== null);
    const tail = evidence.length > 0 ? `; ${evidence.join('; ')}` : '';
    return `${d.rank}. ${d.title_en}${code}: ${d.probability.toFixed(3)}${tail}`;
  });
  if (lines.length === 0) lines.push('no diagnosis scored');
  lines.push(`none of these: ${answer.unknown_probability.toFixed(3)}`);
  if (answer.next_findings.length > 0)
    lines.push(`ask next: ${answer.next_findings.map(labelOf).join(', ')}`);
  const used = answer.findings.map((f) => `${labelOf(f)} (${f.present ? 'present' : 'absent'})`);
  lines.push(`findings used: ${used.length > 0 ? used.join(', ') : 'none recognised'}`);
  for (const warning of answer.warnings ?? []) lines.push(`warning: ${warning}`);
  return lines.join('\n');
}

export function summarizeSkill(
  llm: ChatBackend,
  model: () => string,
): Skill<{ text: string; max_words: number }> {
  return {
    name: 'summarize',
    description:
      'Summarizes a text (a note, a skill answer) in at most max_words words, in the language of the text.',
    service: 'llm',
    input: z.object({
      text: z.string().trim().min(1).max(20_000).describe('The text to summarize'),
      max_words: z.number().int().min(5).max(500).describe('Longest summary, in words'),
    }),
    run: async (input, ctx) => {
      const result = await llm.complete(
        {
          model: model(),
          messages: [
            {
              role: 'system',
              content: `Summarize the user's text in at most ${input.max_words} words, in the text's own language. Keep every number, drug and finding exactly as written; add nothing.`,
            },
            { role: 'user', content: input.text },
          ],
          temperature: 0,
          maxTokens: Math.min(2048, input.max_words * 4),
        },
        ctx.signal,
      );
      return result.text.trim();
    },
  };
}

export function checkServiceSkill(
  services: Readonly<Record<string, string>>,
  timeoutMs: number,
  metrics?: KitMetrics | Registry,
): Skill<{ service: string }> {
  const names = Object.keys(services);
  const callers = new Map(
    Object.entries(services).map(([name, url]) => [
      name,
      new ServiceCaller(name, url, timeoutMs, undefined, metrics),
    ]),
  );
  return {
    name: 'check_service',
    description: `Asks a suite service whether it is up and ready (its /health). Services: ${names.join(', ')}.`,
    service: null,
    input: z.object({ service: z.enum(names as [string, ...string[]]).describe('Which service') }),
    run: async (input, ctx) => {
      const caller = callers.get(input.service) ?? new ServiceCaller(input.service, '', timeoutMs);
      const { status, body } = await caller.call('/health', { method: 'GET' }, ctx);
      const b = body as { status?: unknown; reason?: unknown };
      const said = typeof b.status === 'string' ? b.status : '';
      const reason = typeof b.reason === 'string' ? `: ${b.reason}` : '';
      return `${input.service}: HTTP ${status}${said === '' ? '' : ` ${said}`}${reason}`;
    },
  };
}

export function currentTimeSkill(): Skill<{ timezone: string }> {
  return {
    name: 'current_time',
    description: 'Answers the current date and time in an IANA time zone such as Asia/Ho_Chi_Minh or UTC.',
    service: null,
    input: z.object({ timezone: z.string().trim().min(1).max(64).describe('IANA time zone, e.g. UTC') }),
    run: (input, ctx) => {
      let formatted: string;
      try {
        formatted = new Intl.DateTimeFormat('en-CA', {
          timeZone: input.timezone,
          dateStyle: 'full',
          timeStyle: 'long',
        }).format(ctx.now());
      } catch {
        return Promise.reject(new Error(`"${input.timezone}" is not an IANA time zone`));
      }
      return Promise.resolve(`${formatted} (${new Date(ctx.now()).toISOString()})`);
    },
  };
}

/** The skills the configuration allows, in a stable order. */
export function buildSkills(config: SkillsConfig): AnySkill[] {
  const skills: AnySkill[] = [];
  const { metrics } = config;
  if (config.codeSearchUrl !== undefined)
    skills.push(
      searchMedicalCodesSkill(config.codeSearchUrl, config.timeoutMs, config.codeSearchToken, metrics),
    );
  if (config.reasoningUrl !== undefined)
    skills.push(askReasoningSkill(config.reasoningUrl, config.timeoutMs, config.reasoningToken, metrics));
  skills.push(summarizeSkill(config.llm, config.model));
  if (Object.keys(config.services).length > 0)
    skills.push(checkServiceSkill(config.services, config.timeoutMs, metrics));
  skills.push(currentTimeSkill());
  return skills;
}

/**
 * The skills of the configuration (CODE_SEARCH_URL, REASONING_URL, TASK_AGENT_SERVICES and their
 * tokens), checked: a name that is invalid, reserved or repeated stops the start (a ConfigError
 * listing every problem).
 */
export function configuredSkills(
  config: TaskAgentConfig,
  deps: Pick<SkillsConfig, 'llm' | 'model' | 'metrics'>,
): AnySkill[] {
  const skills = buildSkills({
    codeSearchUrl: config.CODE_SEARCH_URL,
    codeSearchToken: config.CODE_SEARCH_API_TOKEN,
    reasoningUrl: config.REASONING_URL,
    reasoningToken: config.REASONING_API_TOKEN,
    services: config.TASK_AGENT_SERVICES,
    timeoutMs: config.TASK_AGENT_SKILL_TIMEOUT_MS,
    ...deps,
  });
  const problems = validateSkills(skills);
  if (problems.length > 0) throw new ConfigError(problems);
  return skills;
}
