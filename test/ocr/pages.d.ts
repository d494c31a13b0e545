export const VI_NOTE: readonly string[];
export const EN_NOTE: readonly string[];
export function renderNote(
  lines: readonly string[],
  options?: { width?: number; fontSize?: number },
): Promise<Buffer>;
export function characterAccuracy(truth: string, got: string): number;
export function textPdf(pages: readonly (readonly string[])[]): Buffer;
export function boxedPdf(
  pages: number,
  boxes: {
    media: readonly number[];
    crop?: readonly number[];
    rotate?: number;
  },
): Buffer;
export function nestedFormsPdf(depth: number): Buffer;
