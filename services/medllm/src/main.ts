import { runMain, serve } from '@clinicalsuite/kit';
import { buildMedllmApp } from './app.js';
import { loadMedllmConfig } from './config.js';

runMain(async () => {
  const config = loadMedllmConfig();
  const { kit, backend } = buildMedllmApp({ config });
  await serve(kit, { onShutdown: () => backend.close() });
  // Listening first: /health answers 502 with the reason while llama-server loads.
  backend.start();
});
