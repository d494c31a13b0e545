import { z } from 'zod';
import type { ChildLimits } from './child-limits.js';

/**
 * Configuration comes from the environment, is parsed once with zod at start-up, and a missing or
 * bad value stops the service with a message that names the variable. Nothing reads `process.env`
 * after this.
 */

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** Parses `env` with `schema`; empty strings count as unset so `FOO=` falls back to the default. */
export function loadConfig<S extends z.ZodObject>(schema: S, env: Env = process.env): z.output<S> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value.trim();
  }
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const name = issue.path.map(String).join('.') || '(environment)';
    const given = typeof issue.path[0] === 'string' ? input[issue.path[0]] : undefined;
    const suffix = given === undefined ? '' : ` (got ${JSON.stringify(given)})`;
    const message =
      issue.code === 'invalid_type' && given === undefined ? 'is required but not set' : issue.message;
    return `${name}: ${message}${suffix}`;
  });
  throw new ConfigError(problems);
}

/**
 * The longest delay a Node.js timer keeps (2^31 - 1 ms, about 24.8 days): a longer one fires after
 * 1 ms, so a setting meant as "very long" would act at once.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Field builders for environment variables (strings in, typed values out). */
export const env = {
  int(options: { min?: number; max?: number } = {}) {
    const min = options.min ?? Number.MIN_SAFE_INTEGER;
    const max = options.max ?? Number.MAX_SAFE_INTEGER;
    return z
      .string()
      .regex(/^-?\d+$/, 'must be an integer')
      .transform(Number)
      .pipe(z.number().int().min(min, `must be >= ${min}`).max(max, `must be <= ${max}`));
  },
  /** A delay in milliseconds that a timer waits: at most MAX_TIMER_MS (and `max` when lower). */
  ms(options: { min?: number; max?: number } = {}) {
    const max = Math.min(options.max ?? MAX_TIMER_MS, MAX_TIMER_MS);
    return env
      .int({ min: options.min ?? 0 })
      .pipe(
        z
          .number()
          .max(
            max,
            max === MAX_TIMER_MS
              ? `must be <= ${MAX_TIMER_MS} ms (the longest delay a Node.js timer keeps)`
              : `must be <= ${max}`,
          ),
      );
  },
  number(options: { min?: number; max?: number } = {}) {
    return z
      .string()
      .transform((s, ctx) => {
        const n = Number(s);
        if (!Number.isFinite(n)) ctx.addIssue({ code: 'custom', message: 'must be a number' });
        return n;
      })
      .pipe(
        z
          .number()
          .min(options.min ?? -Infinity)
          .max(options.max ?? Infinity),
      );
  },
  bool() {
    return z
      .string()
      .toLowerCase()
      .pipe(z.enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'], 'must be true or false'))
      .transform((s) => ['1', 'true', 'yes', 'on'].includes(s));
  },
  /** A size such as `10mb`, `512kb` or a plain number of bytes. */
  bytes() {
    return z.string().transform((s, ctx) => {
      const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(s);
      if (m?.[1] === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be a size such as 10mb, 512kb or 1048576' });
        return z.NEVER;
      }
      const unit = (m[2] ?? 'b').toLowerCase();
      const factor = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[unit] ?? 1;
      return Math.floor(Number(m[1]) * factor);
    });
  },
  url() {
    return z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
  },
};

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface KitDefaults {
  readonly port: number;
  readonly maxConcurrency: number;
  readonly queueSize?: number;
  readonly queueTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  readonly bodyLimit?: string;
  readonly bodyMemoryLimit?: string;
  /** Memory of one engine process the service starts (CHILD_MEMORY_LIMIT), default 1gb. */
  readonly childMemoryLimit?: string;
  /** CPU seconds of one engine process (CHILD_CPU_SECONDS), default 120. */
  readonly childCpuSeconds?: number;
}

/**
 * The variables every service reads. A service extends this with its own:
 * `kitConfigSchema({ port: 8001, maxConcurrency: 3 }).extend({ MODEL_PATH: z.string() })`.
 */
export function kitConfigSchema(defaults: KitDefaults) {
  return z.object({
    PORT: env.int({ min: 0, max: 65535 }).default(defaults.port),
    HOST: z.string().default('0.0.0.0'),
    LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
    /** Requests in work at once; more wait in the queue. */
    MAX_CONCURRENCY: env.int({ min: 1, max: 1024 }).default(defaults.maxConcurrency),
    /** Requests allowed to wait for a slot; past it, 429. */
    QUEUE_SIZE: env.int({ min: 0, max: 100_000 }).default(defaults.queueSize ?? 64),
    /** Longest wait for a slot before 429. */
    QUEUE_TIMEOUT_MS: env.ms({ min: 1 }).default(defaults.queueTimeoutMs ?? 60_000),
    /** Deadline of one request, queue wait included; past it, 504 and the work is aborted. */
    REQUEST_TIMEOUT_MS: env.ms({ min: 1 }).default(defaults.requestTimeoutMs ?? 120_000),
    /** Largest JSON or form body; past it, 413. */
    BODY_LIMIT: env.bytes().default(parseBytes(defaults.bodyLimit ?? '1mb')),
    /**
     * Request bodies held in memory at once, all requests together (arriving, waiting and in
     * work), counted as their bytes arrive; past it, 503 with Retry-After (see http/body-memory.ts).
     */
    BODY_MEMORY_LIMIT: env
      .bytes()
      .refine((bytes) => bytes > 0, 'must be more than 0')
      .default(parseBytes(defaults.bodyMemoryLimit ?? '256mb')),
    /**
     * The most of BODY_MEMORY_LIMIT one request's body may hold; past it, 413. Unset: half of
     * BODY_MEMORY_LIMIT. At most BODY_MEMORY_LIMIT (checked by buildApp).
     */
    BODY_MEMORY_SHARE: env
      .bytes()
      .refine((bytes) => bytes > 0, 'must be more than 0')
      .optional(),
    /**
     * Longest wait for the next bytes of a request body once it started; past it, 408 and the
     * connection closed (a body shorter than its Content-Length, a stalled upload). Also the slack
     * of BODY_MIN_RATE.
     */
    BODY_IDLE_TIMEOUT_MS: env.ms({ min: 1 }).default(30_000),
    /**
     * Slowest a request body may arrive, in bytes per second on average (e.g. `1kb`), once
     * BODY_IDLE_TIMEOUT_MS has passed; slower, 408 and the connection closed. 0 turns it off.
     */
    BODY_MIN_RATE: env.bytes().default(1024),
    /** Time allowed to drain in-flight requests on SIGTERM. */
    SHUTDOWN_GRACE_MS: env.ms({ min: 0 }).default(25_000),
    /**
     * Writable memory one engine process (tesseract, poppler, ffmpeg, espeak-ng …) may use, set by
     * the kernel (RLIMIT_DATA, see process.ts); past it the request fails with the service's error.
     */
    CHILD_MEMORY_LIMIT: env
      .bytes()
      .refine((bytes) => bytes >= 16 * 1024 * 1024, 'must be at least 16mb')
      .default(parseBytes(defaults.childMemoryLimit ?? '1gb')),
    /** CPU time one engine process may use, all its threads together (RLIMIT_CPU); killed past it. */
    CHILD_CPU_SECONDS: env.int({ min: 1, max: 86_400 }).default(defaults.childCpuSeconds ?? 120),
    /** Exit when the parent process goes away (set by the local runner, so no service outlives it). */
    EXIT_WITH_PARENT: env.bool().default(false),
    /** A file of `<token> <scope>[,<scope>]` lines (a mounted Secret); re-read when it changes. */
    AUTH_TOKENS_FILE: z.string().optional(),
    /**
     * Serve without bearer auth: anyone who can reach the port may call every route. Off by default;
     * refused by the services whose auth the spec fixes (the llm, the agent).
     */
    AUTH_DISABLED: env.bool().default(false),
    /**
     * Origins (comma-separated, exact `https://host[:port]`) whose browser pages may call this
     * service; none by default (http/cors.ts).
     */
    CORS_ORIGINS: z
      .string()
      .default('')
      .transform((s) =>
        s
          .split(',')
          .map((o) => o.trim())
          .filter((o) => o !== ''),
      )
      .pipe(
        z.array(
          z
            .url({ protocol: /^https?$/, error: 'must be origins such as https://app.example.org' })
            .refine(
              (o) => !URL.canParse(o) || new URL(o).origin === o,
              'must be an origin: scheme://host[:port], no path',
            ),
        ),
      ),
    NVIDIA_SMI_PATH: z.string().default('nvidia-smi'),
    CUDA_VISIBLE_DEVICES: z.string().optional(),
    MODELS_DIR: z.string().optional(),
    MODEL_PATH: z.string().optional(),
    DATA_DIR: z.string().optional(),
  });
}

export type KitConfig = z.output<ReturnType<typeof kitConfigSchema>>;

/** The limits every engine process of the service runs under (ProcessRunner, limitedCommand). */
export function childLimits(
  config: Pick<KitConfig, 'CHILD_MEMORY_LIMIT' | 'CHILD_CPU_SECONDS'>,
): ChildLimits {
  return { memoryBytes: config.CHILD_MEMORY_LIMIT, cpuSeconds: config.CHILD_CPU_SECONDS };
}

function parseBytes(s: string): number {
  return env.bytes().parse(s);
}
