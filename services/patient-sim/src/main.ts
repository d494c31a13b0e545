import { runMain, serve } from '@clinicalsuite/kit';
import { buildPatientSimApp } from './app.js';
import { loadPatientSimConfig } from './config.js';

runMain(async () => {
  const config = loadPatientSimConfig();
  const service = buildPatientSimApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: /health answers 503 with the reason until the LLM does.
  service.start();
});
