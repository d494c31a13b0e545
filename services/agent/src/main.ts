import { runMain, serve } from '@clinicalsuite/kit';
import { buildAgentApp } from './app.js';
import { loadAgentConfig } from './config.js';

runMain(async () => {
  const config = loadAgentConfig();
  const service = buildAgentApp({ config });
  // WebSockets are long-lived: close them as soon as shutdown begins, not after the HTTP drain.
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.prependOnceListener(signal, () => service.close());
  const running = await serve(service.kit, { onShutdown: () => service.close() });
  service.attach(running.server);
  // Listening first: /health answers 503 with the reason until an LLM upstream does.
  service.start();
});
