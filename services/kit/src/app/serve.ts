import type { Server } from 'node:http';
import { ServiceUnavailableError } from '../errors.js';
import type { KitApp } from './build-app.js';

/**
 * Listens, and on SIGTERM or SIGINT shuts down gracefully: readiness goes to "shutting down" (so
 * probes take the pod out of rotation), the server stops accepting connections, idle keep-alive
 * connections close, in-flight requests drain for up to SHUTDOWN_GRACE_MS, whatever is left is
 * aborted and answered 503 with Retry-After (a stream: an error event) before its connection
 * closes, the service's resources close in reverse order (unload models, close stores), then
 * `onShutdown`, and the process exits 0. Once listening it opens the service's resources, so
 * probes answer 503 with the reason while they open.
 */

/** How long the answers to requests aborted at the end of the grace period get to be written. */
const ABORT_FLUSH_MS = 1000;

export interface ServeOptions {
  /** Called after requests drained and the resources closed. */
  readonly onShutdown?: () => Promise<void> | void;
  /** Listen on these signals (default SIGTERM and SIGINT); tests pass []. */
  readonly signals?: readonly NodeJS.Signals[];
  /** Exit the process when shut down by a signal (default true). */
  readonly exit?: boolean;
}

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  /** Drains and closes; resolves when everything stopped. */
  shutdown(reason?: string): Promise<void>;
}

export async function serve(kit: KitApp, options: ServeOptions = {}): Promise<RunningServer> {
  const { config, logger } = kit;
  const server = kit.app.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // Longer than the load balancers' idle timeouts, so they close first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // A body is read once the request is admitted, so it may start arriving after a wait in the
  // queue: the kit's deadline (504 from arrival, over the wait, the upload and the work) answers
  // first; Node's own limit on receiving a request (300 s by default) is only the backstop.
  server.requestTimeout = config.REQUEST_TIMEOUT_MS + 5_000;
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.PORT;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ port, host: config.HOST }, 'listening');
  kit.attach?.(server);
  kit.start();

  let stopping: Promise<void> | undefined;
  const shutdown = (reason = 'shutdown requested'): Promise<void> => {
    stopping ??= (async () => {
      logger.info({ reason, inFlight: kit.live.size }, 'shutting down');
      kit.readiness.setShuttingDown();
      await kit.beforeDrain?.();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections go idle as their last response ends: close them as they do.
      server.closeIdleConnections();
      const reaper = setInterval(() => server.closeIdleConnections(), 50);
      void closed.finally(() => clearInterval(reaper));
      const grace = new Promise<'timeout'>((resolve) =>
        setTimeout(() => resolve('timeout'), config.SHUTDOWN_GRACE_MS).unref(),
      );
      if ((await Promise.race([closed, grace])) === 'timeout') {
        logger.warn({ inFlight: kit.live.size }, 'grace period over: aborting requests still in flight');
        // Each is answered 503 with Retry-After in its route's shape (a stream: an error event), so
        // clients see "retry elsewhere" rather than a reset; the connections close once those are
        // written (the reaper closes them as they go idle), and whatever is still open after a
        // moment is cut.
        for (const ctx of kit.live) ctx.abort(new ServiceUnavailableError('The service is shutting down'));
        const flushed = new Promise<'timeout'>((resolve) =>
          setTimeout(() => resolve('timeout'), ABORT_FLUSH_MS).unref(),
        );
        await Promise.race([closed, flushed]);
        server.closeAllConnections();
        await closed;
      }
      await kit.close();
      await options.onShutdown?.();
      logger.info('stopped');
    })();
    return stopping;
  };

  if (config.EXIT_WITH_PARENT)
    exitWithParent(() => shutdown('parent process exited'), options.exit !== false);
  for (const signal of options.signals ?? (['SIGTERM', 'SIGINT'] as const)) {
    process.once(signal, () => {
      void shutdown(signal).then(
        () => {
          if (options.exit !== false) process.exit(0);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
  return { server, port, url, shutdown };
}

/** Polls the parent pid: when the parent dies the process is re-parented and `ppid` changes. */
function exitWithParent(shutdown: () => Promise<void>, exit: boolean): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    void shutdown().finally(() => {
      if (exit) process.exit(0);
    });
  }, 1000);
  timer.unref();
}
