import { runMain, serve } from '@clinicalsuite/kit';
import { buildFaceApp } from './app.js';
import { loadFaceConfig } from './config.js';

runMain(async () => {
  const config = loadFaceConfig();
  const service = buildFaceApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer (503 with the reason) while the models load.
  service.host.start();
});
