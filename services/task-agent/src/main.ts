import { runMain, serve } from '@clinicalsuite/kit';
import { buildTaskAgentApp } from './app.js';
import { loadTaskAgentConfig } from './config.js';

runMain(async () => {
  const config = loadTaskAgentConfig();
  const service = buildTaskAgentApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: /health answers 503 with the reason until the store is open.
  await service.start();
});
