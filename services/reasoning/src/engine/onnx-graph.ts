import { ELEM, encodeModel, type NodeSpec, type TensorSpec } from '@clinicalsuite/kit/onnx';
import { PREDICTIVE_CLIP } from './information-gain.js';
import type { CompiledModel } from './model.js';

/**
 * The compiled model as an ONNX graph, written with the kit's encoder (no converter, no file). Pure.
 *
 * Inputs (float32, soft values allowed — see model.ts, "Evidence"):
 *   present [batch, F]  certainty of a "present" finding per feature, else 0
 *   absent  [batch, F]  certainty of an "absent" finding per feature, else 0
 * Constants: the log-likelihood-ratio tables against the unknown hypothesis [F, H], log priors [H],
 * the calibration exponent α, and for information gain P(f | h) and H_b(P(f | h)) in bits [F, H].
 * Outputs:
 *   llr       [batch, H]  present·LLR₊ + absent·LLR₋ (uncalibrated; unknown's column is 0)
 *   posterior [batch, H]  Softmax(log π + α·llr), unknown last
 *   gain      [batch, F]  H_b(clip(posterior·Pᵀ)) − posterior·H_b(P)ᵀ, expected information gain (bits)
 *
 *   present ─MatMul(LLR₊)─┐
 *                         Add ─► llr ─Mul(α)─Add(log π)─Softmax─► posterior ─┬─Gemm(Pᵀ)──Clip─H_b─┐
 *   absent ──MatMul(LLR₋)─┘                                                  └─Gemm(H_b(P)ᵀ)─────Sub─► gain
 *
 * The tables are float32 here (float64 in the reference); the encoder writes every value out, which
 * suits bases up to a few million table cells.
 */

export const GRAPH_INPUTS = { present: 'present', absent: 'absent' } as const;
export const GRAPH_OUTPUTS = { llr: 'llr', posterior: 'posterior', gain: 'gain' } as const;
export const OPSET = 17;

const LN2 = Math.LN2;

export function buildScoringGraph(model: CompiledModel): Uint8Array {
  const F = model.features.length;
  const H = model.hypotheses;
  const table = (name: string, values: Float64Array): TensorSpec => ({
    name,
    elemType: ELEM.FLOAT,
    dims: [F, H],
    values: Array.from(values),
  });
  const scalar = (name: string, value: number): TensorSpec => ({
    name,
    elemType: ELEM.FLOAT,
    dims: [],
    values: [value],
  });
  const initializers: TensorSpec[] = [
    table('llr_present', model.llrPresent),
    table('llr_absent', model.llrAbsent),
    table('p_feature', model.probability),
    table('entropy_bits', model.entropyBits),
    { name: 'log_prior', elemType: ELEM.FLOAT, dims: [H], values: Array.from(model.logPrior) },
    scalar('alpha', model.calibration.alpha),
    scalar('clip_lo', PREDICTIVE_CLIP),
    scalar('clip_hi', 1 - PREDICTIVE_CLIP),
    scalar('one', 1),
    scalar('minus_inv_ln2', -1 / LN2),
  ];
  const node = (
    op: string,
    inputs: string[],
    output: string,
    attributes?: NodeSpec['attributes'],
  ): NodeSpec => ({
    op,
    inputs,
    outputs: [output],
    name: output,
    ...(attributes === undefined ? {} : { attributes }),
  });
  const nodes: NodeSpec[] = [
    node('MatMul', [GRAPH_INPUTS.present, 'llr_present'], 'llr_p'),
    node('MatMul', [GRAPH_INPUTS.absent, 'llr_absent'], 'llr_a'),
    node('Add', ['llr_p', 'llr_a'], GRAPH_OUTPUTS.llr),
    node('Mul', [GRAPH_OUTPUTS.llr, 'alpha'], 'llr_scaled'),
    node('Add', ['llr_scaled', 'log_prior'], 'logits'),
    node('Softmax', ['logits'], GRAPH_OUTPUTS.posterior, [{ name: 'axis', int: 1 }]),
    // Information gain: P(f) = posterior · Pᵀ and E_h[H_b(P(f|h))] = posterior · H_b(P)ᵀ.
    node('Gemm', [GRAPH_OUTPUTS.posterior, 'p_feature'], 'pf', [{ name: 'transB', int: 1 }]),
    node('Gemm', [GRAPH_OUTPUTS.posterior, 'entropy_bits'], 'conditional_entropy', [
      { name: 'transB', int: 1 },
    ]),
    node('Clip', ['pf', 'clip_lo', 'clip_hi'], 'pf_clipped'),
    node('Sub', ['one', 'pf_clipped'], 'qf'),
    node('Log', ['pf_clipped'], 'log_pf'),
    node('Log', ['qf'], 'log_qf'),
    node('Mul', ['pf_clipped', 'log_pf'], 'pf_log_pf'),
    node('Mul', ['qf', 'log_qf'], 'qf_log_qf'),
    node('Add', ['pf_log_pf', 'qf_log_qf'], 'neg_entropy_nats'),
    node('Mul', ['neg_entropy_nats', 'minus_inv_ln2'], 'predictive_entropy'),
    node('Sub', ['predictive_entropy', 'conditional_entropy'], GRAPH_OUTPUTS.gain),
  ];
  return encodeModel({
    producer: 'clinicalsuite-reasoning',
    opset: OPSET,
    graph: {
      name: `reasoning_${model.fingerprint}`,
      nodes,
      initializers,
      inputs: [
        { name: GRAPH_INPUTS.present, elemType: ELEM.FLOAT, dims: ['batch', F] },
        { name: GRAPH_INPUTS.absent, elemType: ELEM.FLOAT, dims: ['batch', F] },
      ],
      outputs: [
        { name: GRAPH_OUTPUTS.llr, elemType: ELEM.FLOAT, dims: ['batch', H] },
        { name: GRAPH_OUTPUTS.posterior, elemType: ELEM.FLOAT, dims: ['batch', H] },
        { name: GRAPH_OUTPUTS.gain, elemType: ELEM.FLOAT, dims: ['batch', F] },
      ],
    },
  });
}
