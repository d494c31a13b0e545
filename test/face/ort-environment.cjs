// jest's node environment runs tests in a vm context with its own typed-array constructors, but
// onnxruntime-node's native addon creates output arrays in the main realm, and onnxruntime-common
// (loaded in the context) checks them with instanceof: "A float32 tensor's data must be type of
// Float32Array". Tests that run onnxruntime use this environment, whose typed arrays are the main
// realm's, as they are in a real process.
const { TestEnvironment } = require('jest-environment-node');

const TYPED = [
  'ArrayBuffer',
  'Float32Array',
  'Float64Array',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'BigInt64Array',
  'BigUint64Array',
];

class OrtEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of TYPED) this.global[name] = globalThis[name];
  }
}

module.exports = OrtEnvironment;
