import { runMain, serve } from '@clinicalsuite/kit';
import { PostgresRegistry } from './adapters/postgres-registry.js';
import { buildFaceApp } from './app.js';
import { loadFaceConfig } from './config.js';

runMain(async () => {
  const config = loadFaceConfig();
  const registry =
    config.DATABASE_URL === undefined ? undefined : await PostgresRegistry.open(config.DATABASE_URL);
  const service = buildFaceApp({ config, ...(registry === undefined ? {} : { registry }) });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer (503 with the reason) while the models load.
  service.host.start();
});
