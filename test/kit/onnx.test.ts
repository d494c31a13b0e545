/** @jest-environment ./test/face/ort-environment.cjs */
import { describe, expect, it } from '@jest/globals';
import {
  bytesField,
  ELEM,
  encodeAttribute,
  encodeModel,
  encodeModelParts,
  encodeTensor,
  intField,
  signedVarint,
  varint,
  type ModelSpec,
} from '@clinicalsuite/kit/onnx';
import ort from 'onnxruntime-node';

// The kit's ONNX writer: wire-format pieces against protobuf's own encodings, whole models against
// bytes that onnxruntime already loaded, and models onnxruntime loads and runs (the kit itself
// never depends on onnxruntime: only this test does).

const hex = (bytes: readonly number[] | Uint8Array): string => Buffer.from(bytes).toString('hex');

/** face's registry scorer (dim 4) as its own hand encoder wrote it before the kit had one. */
const SCORE_MODEL_DIM4 =
  '0808120d636c696e6963616c73756974653a6e0a180a016d0a0171120173220d4d61744d756c496e7465676572120f72656769737472795f73636f7265735a140a016d120f0a0d080212090a0312016e0a0208045a140a0171120f0a0d080312090a0208040a0312016b62150a017312100a0e0806120a0a0312016e0a0312016b42040a001011';

function matMul(dim: number, elem: typeof ELEM.FLOAT | typeof ELEM.UINT8, op = 'MatMul'): ModelSpec {
  return {
    producer: 'clinicalsuite',
    graph: {
      name: op === 'MatMul' ? 'title_scores' : 'registry_scores',
      nodes: [{ op, inputs: ['m', 'q'], outputs: ['s'] }],
      inputs: [
        { name: 'm', elemType: elem, dims: ['n', dim] },
        {
          name: 'q',
          elemType: op === 'MatMul' ? ELEM.FLOAT : ELEM.INT8,
          dims: [dim, op === 'MatMul' ? 1 : 'k'],
        },
      ],
      outputs: [
        {
          name: 's',
          elemType: op === 'MatMul' ? ELEM.FLOAT : ELEM.INT32,
          dims: ['n', op === 'MatMul' ? 1 : 'k'],
        },
      ],
    },
  };
}

describe('ONNX writer: wire format', () => {
  it('writes varints as protobuf does', () => {
    expect(hex(varint(0))).toBe('00');
    expect(hex(varint(1))).toBe('01');
    expect(hex(varint(127))).toBe('7f');
    expect(hex(varint(128))).toBe('8001');
    expect(hex(varint(300))).toBe('ac02');
    expect(hex(varint(2 ** 32))).toBe('8080808010');
    expect(() => varint(-1)).toThrow(RangeError);
    expect(() => varint(1.5)).toThrow(RangeError);
  });

  it("writes negative int64 values as ten-byte two's complement, as protobuf does", () => {
    expect(hex(signedVarint(5))).toBe('05');
    expect(hex(signedVarint(-1))).toBe('ffffffffffffffffff01');
    expect(hex(signedVarint(-2))).toBe('feffffffffffffffff01');
    expect(() => signedVarint(0.5)).toThrow(RangeError);
  });

  it('writes tagged varint, length-delimited and nested fields', () => {
    expect(hex(intField(1, 150))).toBe('089601'); // the protobuf documentation's example
    expect(hex(bytesField(2, 'testing'))).toBe('120774657374696e67');
    expect(hex(bytesField(3, intField(1, 150)))).toBe('1a03089601');
    expect(hex(bytesField(20, ''))).toBe('a20100'); // field 20: a two-byte tag
  });

  it('writes attributes and raw little-endian tensors', () => {
    // name "to", i = 1, type INT (2)
    expect(hex(encodeAttribute({ name: 'to', int: 1 }))).toBe('0a02746f1801a00102');
    // name "alpha", f = 0.5, type FLOAT (1)
    expect(hex(encodeAttribute({ name: 'alpha', float: 0.5 }))).toBe('0a05616c706861150000003fa00101');
    // name "axis", i = -1, type INT
    expect(hex(encodeAttribute({ name: 'axis', int: -1 }))).toBe(
      '0a0461786973' + '18ffffffffffffffffff01' + 'a00102',
    );
    // name "perm", ints [0, 2], type INTS (7)
    expect(hex(encodeAttribute({ name: 'perm', ints: [0, 2] }))).toBe(
      '0a047065726d' + '4000' + '4002' + 'a00107',
    );
    // dims [2], INT8, "w", raw bytes as given
    expect(
      hex(encodeTensor({ name: 'w', elemType: ELEM.INT8, dims: [2], raw: Uint8Array.from([0x7f, 0x80]) })),
    ).toBe('08021003420177' + '4a02' + '7f80');
    // dims [2], INT64, "x", raw [1, -1]
    expect(hex(encodeTensor({ name: 'x', elemType: ELEM.INT64, dims: [2], values: [1, -1] }))).toBe(
      '08021007420178' + '4a10' + '0100000000000000' + 'ffffffffffffffff',
    );
  });
});

describe('ONNX writer: models', () => {
  it('writes raw weights, INTS and negative attributes, and contrib-domain nodes onnxruntime runs', async () => {
    // y = Softmax<axis=-1>(Transpose<perm=[1,0]>(MatMulNBits(x, W) + Cast(q8))): W is one 4-bit
    // block per output row (K 32, N 2), q8 an int8 initializer given as raw bytes.
    const b = new Uint8Array(2 * 16);
    for (let i = 0; i < 16; i++) {
      b[i] = 0x99; // row 0: every weight 9 - 8 = 1
      b[16 + i] = 0x77; // row 1: every weight 7 - 8 = -1
    }
    const spec = {
      producer: 'kit-test',
      opsetImports: [{ domain: 'com.microsoft', version: 1 }],
      graph: {
        name: 'contrib',
        nodes: [
          {
            op: 'MatMulNBits',
            domain: 'com.microsoft',
            inputs: ['x', 'w', 'ws'],
            outputs: ['mm'],
            attributes: [
              { name: 'K', int: 32 },
              { name: 'N', int: 2 },
              { name: 'bits', int: 4 },
              { name: 'block_size', int: 32 },
            ],
          },
          { op: 'Cast', inputs: ['q8'], outputs: ['qf'], attributes: [{ name: 'to', int: ELEM.FLOAT }] },
          { op: 'Add', inputs: ['mm', 'qf'], outputs: ['s'] },
          { op: 'Transpose', inputs: ['s'], outputs: ['t'], attributes: [{ name: 'perm', ints: [1, 0] }] },
          { op: 'Softmax', inputs: ['t'], outputs: ['y'], attributes: [{ name: 'axis', int: -1 }] },
        ],
        initializers: [
          { name: 'w', elemType: ELEM.UINT8, dims: [2, 1, 16], raw: b },
          { name: 'ws', elemType: ELEM.FLOAT, dims: [2], values: [0.5, 0.25] },
          { name: 'q8', elemType: ELEM.INT8, dims: [2], raw: Uint8Array.from([0, 0xff]) },
        ],
        inputs: [{ name: 'x', elemType: ELEM.FLOAT, dims: [2, 32] }],
        outputs: [{ name: 'y', elemType: ELEM.FLOAT, dims: [2, 2] }],
      },
    } satisfies ModelSpec;
    const parts = encodeModelParts(spec);
    // The weights are written as given, not copied.
    expect(parts).toContain(b);
    expect(Buffer.concat(parts)).toEqual(Buffer.from(encodeModel(spec)));
    const session = await ort.InferenceSession.create(encodeModel(spec), { logSeverityLevel: 3 });
    try {
      const x = new Float32Array(64);
      x.fill(0.125, 0, 32);
      x.fill(0.25, 32);
      const out = await session.run({ x: new ort.Tensor('float32', x, [2, 32]) });
      // s = [[32·0.125·0.5, 32·0.125·−0.25 − 1], [32·0.25·0.5, 32·0.25·−0.25 − 1]] = [[2, −2], [4, −3]];
      // transposed [[2, 4], [−2, −3]], then a softmax over each row.
      const soft = (a: number, c: number): number[] => [1 / (1 + Math.exp(c - a)), 1 / (1 + Math.exp(a - c))];
      expect(out['y']?.dims).toEqual([2, 2]);
      const got = [...(out['y']?.data as Float32Array)];
      [...soft(2, 4), ...soft(-2, -3)].forEach((v, i) => expect(got[i]).toBeCloseTo(v, 5));
    } finally {
      await session.release();
    }
  });

  it("encodes face's MatMulInteger graph exactly as the bytes onnxruntime already ran", () => {
    expect(hex(encodeModel(matMul(4, ELEM.UINT8, 'MatMulInteger')))).toBe(SCORE_MODEL_DIM4);
  });

  it('writes a MatMul model onnxruntime loads and runs, symbolic dims included', async () => {
    const session = await ort.InferenceSession.create(encodeModel(matMul(3, ELEM.FLOAT)), {
      logSeverityLevel: 3,
    });
    try {
      expect(session.inputNames).toEqual(['m', 'q']);
      expect(session.outputNames).toEqual(['s']);
      const m = Float32Array.from([1, 2, 3, 4, 5, 6]);
      const out = await session.run({
        m: new ort.Tensor('float32', m, [2, 3]),
        q: new ort.Tensor('float32', Float32Array.from([1, 0, -1]), [3, 1]),
      });
      expect(out['s']?.dims).toEqual([2, 1]);
      expect([...(out['s']?.data as Float32Array)]).toEqual([-2, -2]);
    } finally {
      await session.release();
    }
  });

  it('writes initializers, node names and attributes onnxruntime reads', async () => {
    // y = Cast<to=FLOAT>(x) * scale + offset, with int64 x and float initializers.
    const model = encodeModel({
      producer: 'kit-test',
      graph: {
        name: 'affine',
        nodes: [
          {
            op: 'Cast',
            name: 'cast',
            inputs: ['x'],
            outputs: ['xf'],
            attributes: [{ name: 'to', int: ELEM.FLOAT }],
          },
          { op: 'Mul', name: 'mul', inputs: ['xf', 'scale'], outputs: ['scaled'] },
          { op: 'Add', name: 'add', inputs: ['scaled', 'offset'], outputs: ['y'] },
        ],
        initializers: [
          { name: 'scale', elemType: ELEM.FLOAT, dims: [], values: [0.5] },
          { name: 'offset', elemType: ELEM.FLOAT, dims: [2], values: [10, -10] },
        ],
        inputs: [{ name: 'x', elemType: ELEM.INT64, dims: ['batch', 2] }],
        outputs: [{ name: 'y', elemType: ELEM.FLOAT, dims: ['batch', 2] }],
      },
    });
    const session = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
    try {
      const out = await session.run({
        x: new ort.Tensor('int64', BigInt64Array.from([2n, 4n, -6n, 8n]), [2, 2]),
      });
      expect([...(out['y']?.data as Float32Array)]).toEqual([11, -8, 7, -6]);
    } finally {
      await session.release();
    }
  });
});
