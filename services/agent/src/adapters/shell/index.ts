import { performance } from 'node:perf_hooks';
import { relative as relativePath, resolve } from 'node:path';
import {
  childLimits,
  ForbiddenError,
  InternalError,
  NotFoundError,
  ServiceUnavailableError,
  type Logger,
} from '@clinicalsuite/kit';
import type { AgentConfig } from '../../config.js';
import {
  checkTranslated,
  COMMAND_WORDS,
  decide,
  formatCommandLine,
  NEVER_RUN,
  neverRunReason,
  parseTranslation,
  relativeWorkdir,
  SHELL_COMMAND_SCHEMA,
  shellPolicy,
  TRANSLATION_MAX_TOKENS,
  translationMessages,
  type Refusal,
  type ShellPolicy,
} from '../../domain/shell/index.js';
import type { LlmRouter } from '../../domain/types.js';
import type { AgentMetrics, ShellOutcome } from '../../metrics.js';
import type { ShellRequest, ShellResponse } from '../../schemas/shell.js';
import {
  prepareRoot,
  programName,
  resolveProgram,
  resolveWorkdir,
  SHELL_PATH,
  traversableBy,
} from './filesystem.js';
import { CommandRunner, SpawnError, type RunOutcome } from './runner.js';

export type { ShellRequest, ShellResponse } from '../../schemas/shell.js';

/** The 403 body's detail when SHELL_EXEC_ENABLED is off. */
export const SHELL_DISABLED_DETAIL = 'Shell execution is disabled (SHELL_EXEC_ENABLED)';

/**
 * `/shell` (and the `shell` intent of /run): decide with the pure policy, translate natural language
 * with the LLM (then decide again on its argv), and run the argv with the runner. Every attempt is
 * counted (`shell_attempts_total{outcome}`) and logged at info with its outcome, the program's name
 * (when it is a known one) and the refusal code; arguments, output and refusal messages are debug-only.
 */
export interface Shell {
  /** SHELL_EXEC_ENABLED. */
  readonly enabled: boolean;
  /**
   * Runs a request: its result whatever the exit status (200), or a ForbiddenError (403: disabled,
   * blocked, untranslatable), NotFoundError (the workdir does not exist), the router's error when the
   * translation LLM fails, the abort reason when `signal` fires.
   */
  run(request: ShellRequest, signal: AbortSignal, log: Logger): Promise<ShellResponse>;
  /** Counts and logs a refused request while disabled; the error to answer with. */
  refuseDisabled(log: Logger): ForbiddenError;
  /** Commands running now. */
  readonly running: number;
  /** Kills every running command and its process group (shutdown). */
  close(): void;
}

export interface ShellDeps {
  readonly router: LlmRouter;
  readonly logger: Logger;
  readonly metrics: AgentMetrics;
  /** Where the shell is run as: defaults to `process.getuid()`/`getgid()` (tests). */
  readonly processIds?: { readonly uid: number; readonly gid: number };
}

/** The uid and gid commands run as: the configured ones, else nobody (65534) when the agent is root. */
export function runAsIds(
  config: Pick<AgentConfig, 'SHELL_RUN_AS_UID' | 'SHELL_RUN_AS_GID'>,
  self: { readonly uid: number; readonly gid: number },
): { readonly uid: number | undefined; readonly gid: number | undefined } {
  const root = self.uid === 0;
  return {
    uid: config.SHELL_RUN_AS_UID ?? (root ? 65534 : undefined),
    gid: config.SHELL_RUN_AS_GID ?? (root ? 65534 : undefined),
  };
}

export function createShell(config: AgentConfig, deps: ShellDeps): Shell {
  const policy: ShellPolicy = shellPolicy(config);
  const runnable = config.SHELL_ALLOWLIST.filter((p) => neverRunReason(p) === undefined);
  const self = deps.processIds ?? { uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };
  const ids = runAsIds(config, self);
  const runner = new CommandRunner();
  /** SHELL_WORKDIR made absolute (the policy reads workdirs against it). */
  const rootPath = resolve(config.shellWorkdir);
  let root: Promise<string> | undefined;

  if (config.SHELL_EXEC_ENABLED) warnAtStart(config, deps.logger, ids, self);

  const realRoot = (): Promise<string> => {
    root ??= prepareRoot(rootPath).catch((error: unknown) => {
      root = undefined;
      throw new ServiceUnavailableError(
        `The shell's working directory ${config.shellWorkdir} cannot be created (SHELL_WORKDIR)`,
        5,
        { cause: error },
      );
    });
    return root;
  };

  const record = (
    log: Logger,
    outcome: ShellOutcome,
    fields: { program?: string | undefined; reason?: string; translated?: boolean; [key: string]: unknown },
  ): void => {
    deps.metrics.shellAttempts.inc({ outcome });
    const program = fields.program === undefined ? undefined : loggableProgram(fields.program, policy);
    log.info({ shell: { outcome, ...fields, program } }, 'shell attempt');
  };

  const blocked = (log: Logger, refusal: Refusal, translated: boolean, program?: string): ForbiddenError => {
    const untranslatable = refusal.code === 'untranslatable';
    record(log, untranslatable ? 'refused_translation' : 'refused_policy', {
      program,
      reason: refusal.code,
      translated,
    });
    log.debug({ shell: { refusal: refusal.message } }, 'shell refusal detail');
    return untranslatable
      ? new ForbiddenError(`Command not translated: ${refusal.message}`, { code: 'shell_untranslatable' })
      : new ForbiddenError(`Command blocked: ${refusal.message}`, { code: 'shell_blocked' });
  };

  const refuseDisabled = (log: Logger): ForbiddenError => {
    record(log, 'refused_disabled', { reason: 'disabled' });
    return new ForbiddenError(SHELL_DISABLED_DETAIL, { code: 'shell_disabled' });
  };

  const translate = async (command: string, signal: AbortSignal, log: Logger): Promise<readonly string[]> => {
    let text: string;
    try {
      const result = await deps.router.complete(
        {
          messages: translationMessages(command, runnable),
          intent: 'shell',
          jsonSchema: SHELL_COMMAND_SCHEMA,
          temperature: 0,
          maxTokens: TRANSLATION_MAX_TOKENS,
        },
        signal,
      );
      text = result.text;
      log.debug({ shell: { model: result.model, finish: result.finishReason } }, 'shell translation');
    } catch (error) {
      if (!signal.aborted) record(log, 'refused_translation', { reason: 'llm_failed', translated: true });
      throw error;
    }
    const parsed = parseTranslation(text);
    if (!parsed.ok) throw blocked(log, parsed.refusal, true);
    const checked = checkTranslated(parsed.value, policy);
    if (!checked.ok) throw blocked(log, checked.refusal, true, parsed.value[0]);
    return checked.value;
  };

  return {
    enabled: config.SHELL_EXEC_ENABLED,
    get running() {
      return runner.running;
    },
    refuseDisabled,
    close: () => runner.killAll(),
    run: async (request, signal, log) => {
      if (!config.SHELL_EXEC_ENABLED) throw refuseDisabled(log);
      const decision = decide(request.command, policy);
      if (decision.kind === 'refused')
        throw blocked(log, decision.refusal, false, firstWord(request.command));
      const where = relativeWorkdir(rootPath, request.workdir);
      if (!where.ok) throw blocked(log, where.refusal, false);
      const base = await realRoot();
      const workdir = await resolveWorkdir(base, where.value);
      if (!workdir.ok) {
        if (workdir.reason === 'outside') {
          throw blocked(
            log,
            { code: 'workdir_outside', message: "The workdir leads outside the shell's root directory" },
            false,
          );
        }
        record(log, 'failed', { reason: `workdir_${workdir.reason}` });
        throw new NotFoundError(
          workdir.reason === 'missing'
            ? `The workdir ${JSON.stringify(where.value)} does not exist in the shell's root directory`
            : `The workdir ${JSON.stringify(where.value)} is not a directory`,
        );
      }
      const translated = decision.kind === 'translate';
      const argv = translated ? await translate(request.command, signal, log) : decision.argv;
      const name = argv[0] ?? '';
      const timeoutS = Math.min(request.timeout, config.SHELL_MAX_TIMEOUT_S);
      const shown = relativePath(base, workdir.path) || '.';
      const response = (outcome: RunOutcome): ShellResponse => ({
        command: formatCommandLine(argv),
        argv: [...argv],
        translated,
        workdir: shown,
        exit_code: outcome.exitCode,
        signal: outcome.signal,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        stdout_truncated: outcome.stdoutTruncated,
        stderr_truncated: outcome.stderrTruncated,
        timed_out: outcome.timedOut,
        timeout_s: timeoutS,
        duration_ms: outcome.durationMs,
      });

      const program = await resolveProgram(name);
      if (program === undefined) {
        record(log, 'failed', { program: name, reason: 'not_installed', translated, exit_code: 127 });
        return response({
          exitCode: 127,
          signal: null,
          stdout: '',
          stderr: `${name}: command not found (looked in ${SHELL_PATH.join(':')})\n`,
          stdoutTruncated: false,
          stderrTruncated: false,
          timedOut: false,
          durationMs: 0,
        });
      }
      const realName = programName(program.real);
      const never = neverRunReason(realName);
      if (never !== undefined) {
        throw blocked(
          log,
          {
            code: 'program_never_allowed',
            message: `${name} is ${realName}, which is never run: it ${never}`,
          },
          translated,
          name,
        );
      }
      log.debug(
        { shell: { argv, workdir: shown, timeout_s: timeoutS, translated } },
        'shell command starting',
      );
      const started = performance.now();
      let outcome: RunOutcome;
      try {
        outcome = await runner.run({
          file: program.path,
          args: argv.slice(1),
          cwd: workdir.path,
          env: { PATH: SHELL_PATH.join(':'), LANG: 'C.UTF-8', HOME: workdir.path },
          uid: ids.uid,
          gid: ids.gid,
          timeoutMs: timeoutS * 1000,
          maxOutputBytes: config.SHELL_MAX_OUTPUT_BYTES,
          limits: childLimits(config),
          signal,
        });
      } catch (error) {
        const ms = Math.round(performance.now() - started);
        if (error instanceof SpawnError) {
          record(log, 'failed', {
            program: name,
            reason: `spawn_${error.code}`,
            translated,
            duration_ms: ms,
          });
          throw new InternalError(
            `${name} could not be started (${error.code})` +
              (error.code === 'EPERM' ? ': the agent may not switch to SHELL_RUN_AS_UID/GID' : ''),
            { cause: error },
          );
        }
        record(log, 'failed', { program: name, reason: 'aborted', translated, duration_ms: ms });
        throw error;
      }
      const result: ShellOutcome = outcome.timedOut
        ? 'timeout'
        : outcome.exitCode === 0
          ? 'executed'
          : 'failed';
      record(log, result, {
        program: name,
        translated,
        exit_code: outcome.exitCode,
        signal: outcome.signal,
        duration_ms: outcome.durationMs,
        stdout_truncated: outcome.stdoutTruncated,
        stderr_truncated: outcome.stderrTruncated,
      });
      log.debug(
        {
          shell: {
            stdout_bytes: Buffer.byteLength(outcome.stdout),
            stderr_bytes: Buffer.byteLength(outcome.stderr),
          },
        },
        'shell command output',
      );
      return response(outcome);
    },
  };
}

function firstWord(command: string): string {
  return command.trim().split(' ')[0] ?? '';
}

/** A program name as it may be logged: a known program's name, else `(other)` (it could be anyone's text). */
function loggableProgram(program: string, policy: ShellPolicy): string {
  const known = policy.allowlist.has(program) || COMMAND_WORDS.has(program) || NEVER_RUN.includes(program);
  return known ? program : '(other)';
}

function warnAtStart(
  config: AgentConfig,
  logger: Logger,
  ids: { uid: number | undefined; gid: number | undefined },
  self: { uid: number; gid: number },
): void {
  const never = config.SHELL_ALLOWLIST.filter((p) => neverRunReason(p) !== undefined);
  if (never.length > 0) {
    logger.warn(
      { programs: never },
      'SHELL_ALLOWLIST names programs that run other programs, interpret code or change the system: they are never run',
    );
  }
  const uid = ids.uid ?? self.uid;
  if (uid === 0) logger.warn('shell commands run as root (SHELL_RUN_AS_UID=0): prefer an unprivileged user');
  if (ids.uid !== undefined && !traversableBy(config.shellWorkdir, ids.uid, ids.gid ?? self.gid)) {
    logger.warn(
      { workdir: config.shellWorkdir, uid: ids.uid },
      'the shell user cannot enter SHELL_WORKDIR (or a directory above it): commands will fail to read it',
    );
  }
  logger.info(
    {
      allowlist: config.SHELL_ALLOWLIST.filter((p) => !never.includes(p)),
      uid,
      workdir: config.shellWorkdir,
    },
    'shell execution enabled',
  );
}
