import { runMain, serve } from '@clinicalsuite/kit';
import { buildTtsApp } from './app.js';
import { loadTtsConfig } from './config.js';

runMain(async () => {
  const config = loadTtsConfig();
  const service = buildTtsApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer (503 with the reason) while espeak-ng is checked and voices load.
  service.start();
});
