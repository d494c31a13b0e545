/**
 * The operator process: serves /metrics, /healthz and /readyz (the service kit), elects a leader
 * on a Lease, and while leading watches ClinicalSuites and what they own and reconciles them.
 * `npm run operator` runs it against the current kubeconfig.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Counter } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { buildApp, env, kitConfigSchema, loadConfig, Readiness, runMain, serve } from '@clinicalsuite/kit';
import { KubeConfig } from '@kubernetes/client-node';
import { Controller } from './controller/controller.js';
import { DEFAULT_RESYNC_MS, Reconciler } from './controller/reconcile.js';
import { KubeClient } from './k8s/client.js';
import { EventRecorder } from './k8s/events.js';
import { LeaderElector } from './k8s/lease.js';
import { parseWatchNamespaces, watchSuites, type Watcher } from './k8s/watch.js';
import { DEFAULT_OPERATOR_CONFIG, parseOperatorConfig } from './resources/index.js';

const configSchema = kitConfigSchema({ port: 8080, maxConcurrency: 4 }).extend({
  /** YAML file of the operator's config (resource profiles …); the defaults when unset. */
  OPERATOR_CONFIG_FILE: z.string().optional(),
  LEADER_ELECT: env.bool().default(true),
  LEASE_NAME: z.string().default('clinicalsuite-operator'),
  POD_NAMESPACE: z.string().default('default'),
  POD_NAME: z.string().optional(),
  WORKERS: env.int({ min: 1, max: 64 }).default(2),
  /**
   * Namespaces whose ClinicalSuites are reconciled, comma-separated, or `*` for every namespace
   * (the default of a process run by hand; the Helm chart sets the namespaces it grants a Role in).
   */
  WATCH_NAMESPACES: z
    .string()
    .default('*')
    .transform((value, ctx) => {
      try {
        return parseWatchNamespaces(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** How long a leader's lease lasts without renewal (client-go's default: 15 s). */
  LEASE_DURATION_SECONDS: env.int({ min: 2, max: 300 }).default(15),
  /**
   * Every suite is reconciled again this often, every object applied whatever its applied-hash,
   * so hand edits are reverted and what no watch reports is put right; 0 turns it off.
   */
  RESYNC_PERIOD_SECONDS: env.int({ min: 0, max: 86_400 }).default(DEFAULT_RESYNC_MS / 1000),
});

runMain(async () => {
  const config = loadConfig(configSchema);
  const operatorConfig =
    config.OPERATOR_CONFIG_FILE === undefined
      ? DEFAULT_OPERATOR_CONFIG
      : parseOperatorConfig(parseYaml(readFileSync(config.OPERATOR_CONFIG_FILE, 'utf8')));
  const readiness = new Readiness('starting');
  const kit = buildApp({
    service: 'operator',
    title: 'ClinicalSuite operator',
    version: '0.1.0',
    config,
    readiness,
    routes: [
      {
        method: 'get',
        path: '/healthz',
        summary: 'Liveness of the operator process',
        auth: false,
        handler: () => ({ ok: true }),
      },
    ],
  });
  const { logger } = kit;
  const writes = new Counter({
    name: 'clinicalsuite_operator_api_writes_total',
    help: 'Writes the operator made to the API server, by verb and kind.',
    labelNames: ['verb', 'kind'] as const,
    registers: [kit.metrics.registry],
  });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const client = new KubeClient(kc, (verb, kind) => writes.inc({ verb, kind }));
  const controller = new Controller({
    reconciler: new Reconciler(
      client,
      operatorConfig,
      undefined,
      undefined,
      new EventRecorder(client),
      config.RESYNC_PERIOD_SECONDS * 1000,
    ),
    registry: kit.metrics.registry,
    logger,
    workers: config.WORKERS,
  });
  const identity = config.POD_NAME ?? `${hostname()}-${process.pid}`;
  const elector = new LeaderElector(new KubeClient(kc), {
    namespace: config.POD_NAMESPACE,
    name: config.LEASE_NAME,
    identity,
    leaseMs: config.LEASE_DURATION_SECONDS * 1000,
    renewMs: Math.max(500, (config.LEASE_DURATION_SECONDS * 1000) / 5),
  });
  const running: { watcher?: Watcher } = {};
  await serve(kit, {
    onShutdown: async () => {
      elector.stop();
      await running.watcher?.stop();
      await controller.stop();
    },
  });
  readiness.setReady();
  if (config.LEADER_ELECT) {
    logger.info({ identity, lease: `${config.POD_NAMESPACE}/${config.LEASE_NAME}` }, 'waiting to lead');
    await elector.run(() => {
      logger.error('lost the leader lease; exiting so a new leader takes over');
      process.exit(1);
    });
  }
  const scope = config.WATCH_NAMESPACES;
  logger.info(
    { identity, namespaces: scope.all ? '*' : scope.namespaces.join(',') },
    'leading: reconciling ClinicalSuites',
  );
  controller.start();
  running.watcher = watchSuites(
    kc,
    (key) => controller.queue.add(key),
    (what, error) => logger.warn({ err: error, what }, 'watch failed; restarting it'),
    { resyncMs: config.RESYNC_PERIOD_SECONDS * 1000, scope },
  );
});
