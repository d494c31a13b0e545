/**
 * The text LLM's entry, `dist/boot.cjs`: the runner and the operator start this file. It is
 * CommonJS so that it runs before anything starts libuv's thread pool. It sizes the pool for where
 * decoding will run (thread-pool.ts), then loads the service. A UV_THREADPOOL_SIZE that is already
 * set is left as it is.
 */
// A synchronous load, before anything starts the pool (Node loads an ES module this way too).
// eslint-disable-next-line @typescript-eslint/no-require-imports
import threadPool = require('./thread-pool.js');

const choice = threadPool.threadPoolChoice(process.env);
if (!choice.given) process.env['UV_THREADPOOL_SIZE'] = String(choice.size);
void import('./main.js');
