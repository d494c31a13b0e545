import { runMain, serve } from '@clinicalsuite/kit';
import { PostgresRegistry } from './adapters/postgres-registry.js';
import { buildFaceApp } from './app.js';
import { loadFaceConfig } from './config.js';

runMain(async () => {
  const config = loadFaceConfig();
  const registry =
    config.DATABASE_URL === undefined
      ? undefined
      : await PostgresRegistry.open(config.DATABASE_URL, {
          reloadMs: config.REGISTRY_RELOAD_MS,
          listenCheckMs: config.REGISTRY_LISTEN_CHECK_MS,
          queryTimeoutMs: config.REGISTRY_QUERY_TIMEOUT_MS,
        });
  const service = buildFaceApp({ config, ...(registry === undefined ? {} : { registry }) });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer (503 with the reason) while the models load.
  service.host.start();
});
