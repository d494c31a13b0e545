import { runMain, serve } from '@clinicalsuite/kit';
import { buildOcrApp } from './app.js';
import { loadOcrConfig } from './config.js';

runMain(async () => {
  const config = loadOcrConfig();
  const service = buildOcrApp({ config });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: probes answer (503 with the reason) while tesseract is looked for and warmed.
  service.host.start();
});
