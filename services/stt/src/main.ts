import { runMain, serve } from '@clinicalsuite/kit';
import { buildSttApp } from './app.js';
import { loadSttConfig } from './config.js';

runMain(async () => {
  const config = loadSttConfig();
  const service = buildSttApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer (503 with the reason) while the engines start.
  service.start();
});
