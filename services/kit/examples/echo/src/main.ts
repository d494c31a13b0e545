import { runMain, serve } from '@clinicalsuite/kit';
import { buildEchoApp } from './app.js';
import { loadEchoConfig } from './config.js';

runMain(async () => {
  // Listens, opens the resources (probes answer 503 with the reason meanwhile); on SIGTERM drains,
  // closes them in reverse order and exits 0.
  await serve(buildEchoApp({ config: loadEchoConfig() }).kit);
});
