/**
 * `npm start -- [suite.yaml]`: runs a ClinicalSuite as processes on this machine.
 * Exit codes: 0 stopped by SIGINT/SIGTERM (or nothing enabled), 1 failure, 2 bad arguments,
 * environment or suite file, 130 killed by a second Ctrl-C.
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import {
  COMPONENTS,
  enabledComponents,
  parseSuite,
  TOKEN_ENV_NAMES,
  type Suite,
} from '../api/v1alpha1/index.js';
import { clusterOnlyEnv } from '../plan/service-env.js';
import { authDisabledWarning } from '../plan/auth-warnings.js';
import { describeUnreadEnv, unreadEnv } from '../plan/unread-env.js';
import { readConfig, type RunnerConfig } from './config.js';
import { planLocal, type ProcessSpec } from './plan.js';
import { Runner, type ModelStep } from './runner.js';
import { describeTokens, generateToken, resolveTokens, whereIs, type ResolvedTokens } from './tokens.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DEFAULT_SUITE = join(REPO_ROOT, 'crds', 'samples', 'local.yaml');

const USAGE = `usage: npm start -- [suite.yaml]   (default: crds/samples/local.yaml)

Runs the services of a ClinicalSuite as processes on this machine.
Environment: CLINICALSUITE_HOME (default ~/.cache/clinicalsuite), CLINICALSUITE_SERVICES_DIR
(default <repo>/services), CLINICALSUITE_BASE_PORT, API_TOKEN, AI_AGENT_API_TOKEN,
TASK_AGENT_API_TOKEN, TASK_PROXY_USER, TASK_PROXY_PASSWORD, LOG_LEVEL.
`;

const out = (text: string): void => void process.stdout.write(text);
const err = (text: string): void => void process.stderr.write(text);

class UsageError extends Error {}

async function loadSuite(file: string): Promise<Suite> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0)
    throw new UsageError(`${file} is not valid YAML:\n${doc.errors.map((e) => e.message).join('\n')}`);
  let suite: Suite;
  try {
    suite = parseSuite(doc.toJS());
  } catch (error) {
    throw new UsageError(`${file}: ${(error as Error).message}`);
  }
  const referenced = clusterOnlyEnv(suite);
  if (referenced.length > 0)
    throw new UsageError(
      `${file}: ${referenced.join(', ')} take their value from a Secret or ConfigMap (valueFrom), ` +
        'which only Kubernetes resolves: give the local runner a value instead',
    );
  return suite;
}

/** The kit's model store, loaded only now so that a runner without it still runs what needs no model. */
async function loadModelStore(
  modelsDir: string,
  retries: number | undefined,
): Promise<{ step: ModelStep; manifest?: Record<string, { file: string }> }> {
  try {
    const kit = await import('./kit-models.js');
    return { step: kit.kitModelStep(modelsDir, retries, process.env), manifest: kit.MODEL_MANIFEST };
  } catch (error) {
    const why = (error as Error).message;
    return {
      step: () =>
        Promise.reject(new Error(`the model store (@clinicalsuite/kit/models) could not be loaded: ${why}`)),
    };
  }
}

/**
 * What the runner keeps in tokens.env: every token, and the first user of each enabled component
 * that signs users in (the task proxy), its name defaulting to the catalogue's and its password
 * generated like a token.
 */
function credentialNames(suite: Suite): { names: string[]; generate: (name: string) => string } {
  const defaults = new Map<string, string>();
  const names = [...TOKEN_ENV_NAMES];
  for (const key of enabledComponents(suite.spec.services)) {
    const signIn = COMPONENTS[key].signIn;
    if (signIn === undefined) continue;
    names.push(signIn.userEnv, signIn.passwordEnv);
    defaults.set(signIn.userEnv, signIn.defaultUser);
  }
  return { names: [...new Set(names)], generate: (name) => defaults.get(name) ?? generateToken() };
}

/** A line per component that signs users in: where to, as whom, and where its password is (never the password). */
function describeSignIns(plan: readonly ProcessSpec[], resolved: ResolvedTokens): string[] {
  return plan.flatMap((spec) => {
    const signIn = COMPONENTS[spec.component].signIn;
    const user = signIn === undefined ? undefined : resolved.tokens[signIn.userEnv];
    if (signIn === undefined || user === undefined) return [];
    return [
      `${spec.component} sign-in at ${spec.url}: user "${user}" (${signIn.userEnv} ${whereIs(resolved, signIn.userEnv)}), ` +
        `password ${signIn.passwordEnv} ${whereIs(resolved, signIn.passwordEnv)}`,
    ];
  });
}

function displayDir(spec: ProcessSpec): string {
  const dir = resolve(spec.entry, '..', '..');
  const rel = relative(REPO_ROOT, dir);
  return rel.startsWith('..') || isAbsolute(rel) ? dir : rel;
}

async function run(argv: readonly string[]): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    out(USAGE);
    return 0;
  }
  const flags = argv.filter((a) => a.startsWith('-'));
  if (flags.length > 0 || argv.length > 1)
    throw new UsageError(`unexpected argument ${flags[0] ?? argv[1]}\n${USAGE}`);
  const file = resolve(argv[0] ?? DEFAULT_SUITE);
  const suite = await loadSuite(file);
  let config: RunnerConfig;
  try {
    config = readConfig(process.env, REPO_ROOT);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (enabledComponents(suite.spec.services).length === 0) {
    out(`no service is enabled in ${file}: set spec.services.<name>.enabled: true\n`);
    return 0;
  }
  for (const key of enabledComponents(suite.spec.services)) {
    const authOff = authDisabledWarning(suite, key);
    if (authOff !== null) err(`warning: ${authOff}\n`);
    for (const unread of unreadEnv(suite, key)) err(`warning: ${describeUnreadEnv(unread)}\n`);
  }
  const modelsDir = join(config.home, 'models');
  const tokens = await resolveTokens({ ...credentialNames(suite), env: process.env, home: config.home });
  if (tokens.generated.length > 0) {
    out(
      `generated ${tokens.generated.join(', ')} into ${tokens.file ?? '?'} (mode 0600; kept for the next runs)\n`,
    );
  }
  const store = await loadModelStore(modelsDir, config.modelRetries);
  const plan = planLocal(suite, {
    home: config.home,
    servicesDir: config.servicesDir,
    tokens: tokens.tokens,
    basePortOverride: config.basePort,
    inherit: config.inherit,
    ...(store.manifest ? { manifest: store.manifest } : {}),
  });
  out(
    `ClinicalSuite "${suite.metadata.name}" from ${file}: ${plan.length} service(s), home ${config.home}\n`,
  );
  out(`service logs: ${join(config.home, 'logs')}/<service>.log\n`);
  const runner = new Runner({
    plan,
    modelStep: store.step,
    backoff: config.backoff,
    dependencyWaitMs: config.dependencyWaitMs,
    stopTimeoutMs: config.stopTimeoutMs,
    healthIntervalMs: config.healthIntervalMs,
    write: out,
    displayDir,
    footer: [describeTokens(tokens), ...describeSignIns(plan, tokens), 'Ctrl-C to stop'],
  });
  process.on('exit', () => runner.kill());
  return new Promise<number>((done, fail) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        out(`\n${signal} again: killing every service\n`);
        void runner.killAll(2000).then(() => done(130));
        return;
      }
      stopping = true;
      out(`\n${signal}: stopping (again to kill at once)\n`);
      runner.stop().then((count) => {
        out(`stopped ${count} service(s); bye\n`);
        done(0);
      }, fail);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    runner.start().then(() => {
      if (!stopping && runner.rows().every((row) => row.state === 'missing')) {
        err('nothing to run: no enabled service is built in this checkout\n');
        done(1);
      }
    }, fail);
  });
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      err(`${error.message}\n`);
      process.exit(2);
    }
    err(`clinicalsuite: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
