import { runMain, serve } from '@clinicalsuite/kit';
import { buildCodesearchApp } from './app.js';
import { loadCodesearchConfig } from './config.js';

runMain(async () => {
  const config = loadCodesearchConfig();
  const service = buildCodesearchApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer 503 with the reason while the code sets load.
  await service.start();
});
