// The speech the WER benchmark (test/bench/stt/wer.js) scores: real recordings with reference
// transcripts that public packages ship, fetched on first use through the kit's model store (each
// file checked by sha256) into $CLINICALSUITE_HOME/fixtures/stt/wer (default ~/.cache/clinicalsuite),
// never committed. Sources, licences and counts: services/stt/README.md ("Accuracy").
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { extract } from 'tar';
import { checkExisting, fetchModel } from '../../../services/kit/dist/models/index.js';

export const SOURCES = {
  pocketsphinx: {
    package: 'pocketsphinx 5.0.4 (PyPI source archive)',
    licence:
      'BSD-2-Clause-style (CMU, pocketsphinx LICENSE); the LibriVox recordings are public domain; ' +
      'the "cards" recordings are CMU test data under the same licence',
    archive: {
      url: 'https://files.pythonhosted.org/packages/ce/89/23e37c19bf30f0570088b7c4b548a666ca94331a6aa5a59b34402becc2d5/pocketsphinx-5.0.4.tar.gz',
      sha256: '17d2971e998490def9554b6ba41886708422af5b4ae888723b1b077aab0fe8d4',
      // Shared with test/stt/fixtures.ts, which fetches the same archive.
      file: join('downloads', 'pocketsphinx-5.0.4.tar.gz'),
      root: 'pocketsphinx-5.0.4/',
    },
  },
  vieneu: {
    package: 'vieneu 3.8.3 (PyPI wheel, VieNeu-TTS, github.com/pnnbao97/VieNeu-TTS)',
    licence:
      'code Apache-2.0; the reference voices CC BY-NC 4.0 (vieneu/assets/voices.json: non-commercial use, ' +
      'credit pnnbao-ump); used here only to measure, never shipped',
    pip: 'vieneu==3.8.3',
  },
};

const ps = (path, sha256, seconds, reference, note) => ({
  source: 'pocketsphinx',
  language: 'en',
  path: `test/data/${path}`,
  sha256,
  seconds,
  reference,
  note,
});
const LIBRIVOX_TXT = 'the matching librivox/<name>.txt';
const CARDS_TXT = 'cards/cards.transcription';

const vn = (path, sha256, seconds, reference, note) => ({
  source: 'vieneu',
  language: 'vi',
  path,
  sha256,
  seconds,
  reference,
  note,
});
const SAMPLES_TXT = 'the matching vieneu/assets/samples/<voice>.txt (also voices.json "text")';
const GRADIO_TXT = 'apps/gradio_xpu.py, the reference text paired with this file';

/** Every utterance: where it is in its package, its sha256, length and what is said. */
export const UTTERANCES = [
  ps(
    'librivox/sense_and_sensibility_01_austen_64kb-0870.wav',
    'b0557cf95c974d930577e58e46b7f068c432a6e3afcc286563d88922b2a5315c',
    7.1,
    'and mister john dashwood had then leisure to consider how much there might be prudently in his power to do for them',
    LIBRIVOX_TXT,
  ),
  ps(
    'librivox/sense_and_sensibility_01_austen_64kb-0880.wav',
    'fbec491ef00ee734a67f0ee318e98c51c157b479e1629ff4f4426861ecac0414',
    2.99,
    'he was not an ill disposed young man',
    LIBRIVOX_TXT,
  ),
  ps(
    'librivox/sense_and_sensibility_01_austen_64kb-0890.wav',
    '5793ffbdee55fb8bfd284943a6866864c832d9d4accf2661cabd39915c84ee10',
    5.3,
    'unless to be rather cold hearted and rather selfish is to be ill disposed',
    LIBRIVOX_TXT,
  ),
  ps(
    'librivox/sense_and_sensibility_01_austen_64kb-0920.wav',
    '40882414ef4cc51f3ff7a63bad0c8c87e7f595ffeb8209fbf756c8ebc5c28a59',
    6.05,
    'had he married a more a amiable woman he might have been made still more respectable than he was',
    LIBRIVOX_TXT,
  ),
  ps(
    'librivox/sense_and_sensibility_01_austen_64kb-0930.wav',
    '954adbf0b56ac8a148cbe77b39ca18d76b5f2a1e1f405565bd786ce3e68a68b7',
    3.29,
    'he might even have been made amiable himself',
    LIBRIVOX_TXT,
  ),
  ps(
    'cards/001.wav',
    '899951e768666f27c8f8b1d4090b96fe7909cae9cec01bec0a5d5d1b8a8d566e',
    1.1,
    'ten of clubs',
    CARDS_TXT,
  ),
  ps(
    'cards/002.wav',
    'a3f9eae6fdb69a1231989e39a14d62388a6f52fb59666c76d95005318fadafec',
    1.96,
    'four queen of clubs',
    CARDS_TXT,
  ),
  ps(
    'cards/003.wav',
    '00d283e46bc257ae479e4aa86593cadb541656eba1d19fc8abeece37f6a5a18b',
    1.54,
    'seven of clubs',
    CARDS_TXT,
  ),
  ps(
    'cards/004.wav',
    '4c44a8177f5b128b99f078cdeb918119933155574231f1833e8840d1af09c521',
    1.55,
    'five five',
    CARDS_TXT,
  ),
  ps(
    'cards/005.wav',
    '090f18f5f76cf8b2b43cd9e6b07823f4685a4742d9a36cd98b174a6586c18cf9',
    3.5,
    'eight of spades four of clubs seven of hearts',
    CARDS_TXT,
  ),
  vn(
    'vieneu/assets/samples/Bình (nam miền Bắc).wav',
    '135f087ced48606c4d406b770a11e344d4d9aa6bd7adfb3e5c26f69cd9cc6df1',
    2.65,
    'Anh chỉ muốn được nhìn nhận như là một huấn luyện viên.',
    SAMPLES_TXT,
  ),
  vn(
    'vieneu/assets/samples/Ly (nữ miền Bắc).wav',
    '0d4e47cfa5ed0b753c2bed07c58e26da89ee2977ca5e941244a6bbafd8869d5e',
    3.07,
    'Chúng ta có thể áp dụng logic tương tự với người khác.',
    SAMPLES_TXT,
  ),
  vn(
    'vieneu/assets/samples/Ngọc (nữ miền Bắc).wav',
    '475a73298fbe86e5d92e7fb95c6c26e897e5a2ffbdc3fa9e062df4025767af93',
    3.64,
    'Trong phòng rất tù mù, nên có thể dễ dàng che dấu nó.',
    SAMPLES_TXT,
  ),
  vn(
    'vieneu/assets/samples/Tuyên (nam miền Bắc).wav',
    'f6b7ac2605db0a2cf634ce0f3a55a87a89f4c2e3bc06f83433e6af583c1f3692',
    4.52,
    'Bạn cầm khúc cây, và ném vào bãi cỏ xanh tươi rậm rạp ở đằng xa.',
    SAMPLES_TXT,
  ),
  vn(
    'vieneu/assets/samples/Vĩnh (nam miền Nam).wav',
    '632a5c8fa34fe03001cc3c44427b5e0ee70f767377bc788b59a5dc9afa9fba49',
    3.43,
    'Đến cuối thế kỷ 19, ngành đánh bắt cá được thương mại hóa.',
    SAMPLES_TXT,
  ),
  vn(
    'vieneu/assets/samples/Đoan (nữ miền Nam).wav',
    '3e319ed45dd2a1458a52edfe43a83a36eff813f19399ac2e59ee3f93cace74be',
    6.14,
    'Nuôi con theo phong cách Do Thái, không chỉ tốt cho đứa trẻ, mà còn tốt cho cả các bậc cha mẹ.',
    SAMPLES_TXT,
  ),
  vn(
    'examples/audio_ref/example.wav',
    'a723ba224a2f98f421a8fd6e850f0f5989ec59d9d7d9ca2f2710b5e7caf73b2c',
    2.47,
    'Ví dụ 2. Tính trung bình của dãy số.',
    GRADIO_TXT,
  ),
  vn(
    'examples/audio_ref/example_2.wav',
    '8f6733df04e5f3477a00136c6baeaf7a196c93df0ee13b9bfa3d8ba61034f063',
    3.63,
    'Trên thực tế, các nghi ngờ đã bắt đầu xuất hiện.',
    GRADIO_TXT,
  ),
  vn(
    'examples/audio_ref/example_3.wav',
    '314d7f2017c725e385f5d814a2613c5129c776fab227eba543838423666b52ea',
    1.19,
    'Cậu có nhìn thấy không?',
    GRADIO_TXT,
  ),
  vn(
    'examples/audio_ref/example_4.wav',
    'bd817540edf7b34744b305c2966ac16b071729b2bab18e9bdd4f38b665b030b0',
    4.01,
    'Tết là dịp mọi người háo hức đón chào một năm mới với nhiều hy vọng và mong ước.',
    GRADIO_TXT,
  ),
].map((u) => ({ ...u, id: `${u.source}/${u.path}` }));

export function fixturesDir(env = process.env) {
  return join(env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite'), 'fixtures', 'stt');
}

/**
 * Fetches the utterances of `languages` that are missing (each checked by sha256) and returns
 * them with the path of their audio.
 */
export async function ensureCorpus(languages, { env = process.env, log = () => undefined } = {}) {
  const base = fixturesDir(env);
  const wanted = UTTERANCES.filter((u) => languages.includes(u.language));
  const dest = (u) => join(base, 'wer', u.source, u.path);
  let staging;
  try {
    for (const u of wanted) {
      if ((await checkExisting(dest(u), u.sha256)).state === 'present') continue;
      let source;
      if (u.source === 'pocketsphinx') {
        if (staging === undefined) {
          const { archive } = SOURCES.pocketsphinx;
          const file = join(base, archive.file);
          log(`fetching ${archive.url}`);
          await fetchModel(archive.url, file, { sha256: archive.sha256, env });
          staging = mkdtempSync(join(tmpdir(), 'stt-wer-'));
          const paths = wanted.filter((w) => w.source === 'pocketsphinx').map((w) => archive.root + w.path);
          await extract({ file, cwd: staging }, paths);
        }
        source = pathToFileURL(join(staging, SOURCES.pocketsphinx.archive.root, u.path)).href;
      } else {
        source = `pip://${SOURCES.vieneu.pip}/${u.path}`;
      }
      const r = await fetchModel(source, dest(u), { sha256: u.sha256, env });
      if (r.downloaded) log(`fetched ${u.id}`);
    }
  } finally {
    if (staging !== undefined) rmSync(staging, { recursive: true, force: true });
  }
  return wanted.map((u) => ({ ...u, audio: dest(u) }));
}
