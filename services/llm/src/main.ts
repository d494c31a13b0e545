import { runMain, serve } from '@clinicalsuite/kit';
import { buildLlmApp } from './app.js';
import { loadLlmConfig } from './config.js';

runMain(async () => {
  const config = loadLlmConfig();
  const { kit, host } = buildLlmApp({ config });
  await serve(kit, { onShutdown: () => host.close() });
  // Listening first: probes answer (503 with the reason) while the model loads.
  host.start();
});
