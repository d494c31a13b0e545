import { runMain, serve } from '@clinicalsuite/kit';
import { buildReasoningApp } from './app.js';
import { loadReasoningConfig } from './config.js';

runMain(async () => {
  // Listening first: /health answers 503 with the reason until the bases and the engine are loaded.
  // SIGTERM: the kit stops accepting, drains requests in flight (SHUTDOWN_GRACE_MS), then releases
  // the engine.
  await serve(buildReasoningApp({ config: loadReasoningConfig() }).kit);
});
