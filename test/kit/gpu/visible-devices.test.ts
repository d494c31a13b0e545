import { describe, expect, it } from '@jest/globals';
import { filterVisibleDevices, parseNvidiaSmiCsv } from '@clinicalsuite/kit/gpu';
import { fixture } from './helpers.js';

const gpus = parseNvidiaSmiCsv(fixture('l4-x2.txt'));
const indices = (visible: string | undefined) => filterVisibleDevices(gpus, visible).map((gpu) => gpu.index);

describe('filterVisibleDevices (CUDA_VISIBLE_DEVICES)', () => {
  it('shows every GPU when the variable is unset', () => {
    expect(indices(undefined)).toEqual([0, 1]);
  });

  it('shows none for "", "-1" and blanks', () => {
    expect(indices('')).toEqual([]);
    expect(indices('-1')).toEqual([]);
    expect(indices('  ')).toEqual([]);
  });

  it('selects by index, in the order listed', () => {
    expect(indices('1')).toEqual([1]);
    expect(indices('1,0')).toEqual([1, 0]);
    expect(indices(' 0 , 1 ')).toEqual([0, 1]);
  });

  it('selects by full UUID or a unique UUID prefix, any case', () => {
    expect(indices('GPU-c2a94b70-15de-4f83-a6b9-0e7d3c58f412')).toEqual([1]);
    expect(indices('GPU-8f6e')).toEqual([0]);
    expect(indices('gpu-C2A9,GPU-8f6e')).toEqual([1, 0]);
  });

  it('ends the list at the first entry that names no GPU, as CUDA does', () => {
    expect(indices('0,-1,1')).toEqual([0]);
    expect(indices('1,7,0')).toEqual([1]);
    expect(indices('GPU-,1')).toEqual([]);
    expect(indices('MIG-4f9a1c2e-0b3d-5e6f-8a7b-9c0d1e2f3a4b')).toEqual([]);
  });

  it('lists a repeated entry once', () => {
    expect(indices('1,1,GPU-c2a9,0')).toEqual([1, 0]);
  });
});
