import { runMain, serve } from '@clinicalsuite/kit';
import { PostgresRegistry } from './adapters/postgres-registry.js';
import { buildFaceApp } from './app.js';
import { loadFaceConfig } from './config.js';

runMain(async () => {
  const config = loadFaceConfig();
  // Opened first (a connection failure stops the service here); the kit closes it on shutdown.
  const registry =
    config.DATABASE_URL === undefined
      ? undefined
      : await PostgresRegistry.open(config.DATABASE_URL, {
          reloadMs: config.REGISTRY_RELOAD_MS,
          listenCheckMs: config.REGISTRY_LISTEN_CHECK_MS,
          queryTimeoutMs: config.REGISTRY_QUERY_TIMEOUT_MS,
        });
  // Listening first: probes answer (503 with the reason) while the models load.
  await serve(buildFaceApp({ config, ...(registry === undefined ? {} : { registry }) }).kit);
});
