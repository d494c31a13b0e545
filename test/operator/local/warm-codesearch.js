// Builds the code search's title vectors into the data directory that the default suite's test
// links for the service ($CLINICALSUITE_HOME/data/codesearch: test/operator/local/
// default-suite.test.ts). The test's suite then reads them back, as a user's second start does,
// instead of embedding every title beside the LLM for the whole test and dropping the unfinished
// vectors when it ends. .ci/run runs it before the tests: minutes the first time, seconds once
// they are cached. Needs the built service (npm run build).
import { homedir } from 'node:os';
import { join } from 'node:path';
import { startBenchCodesearch } from '../../bench/codesearch/service.js';

const home = process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite');
const { stop } = await startBenchCodesearch({
  dataDir: join(home, 'data', 'codesearch'),
  threads: '2',
  waitS: 3600,
  sets: ['codesearch-icd10cm', 'codesearch-icd10pcs'],
});
stop();
