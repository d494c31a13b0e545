import type { RgbImage } from './align.js';
import type { Detection, Point } from './geometry.js';

/**
 * How an image is laid out for a detector of a fixed input size so that faces down to a given size
 * are found (services/face/README.md, "Small faces"): the whole image scaled to the input (up or
 * down) always; when that makes the smallest wanted face smaller than the detector can see, also
 * square tiles at the scales where it can.
 */

export interface Tile {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  /** Faces at least this large (box side, image pixels) are left to a coarser pass. */
  readonly faceLimit: number;
}

export interface ScanOptions {
  /** The detector's input side (pixels): the image's longer side is scaled to it. */
  readonly inputSize: number;
  /** The smallest face the detector finds reliably, in its input's pixels. */
  readonly minInputFace: number;
  /** The smallest face wanted, in image pixels (0: the whole image only). */
  readonly minFace: number;
}

/**
 * The tiles to scan besides the whole image (none when the whole image at the input size shows a
 * face of `minFace` at `minInputFace` or more). Tiles come in levels: the finest at the scale that
 * shows `minFace` at `minInputFace`; each level overlaps its tiles by the largest face it keeps
 * (so each such face lies whole in a tile), and leaves larger faces to the next, coarser level,
 * until the whole image shows them at twice `minInputFace`.
 */
export function scanPlan(width: number, height: number, options: ScanOptions): Tile[] {
  const { inputSize, minInputFace } = options;
  const wholeScale = inputSize / Math.max(width, height);
  const tiles: Tile[] = [];
  let minFace = options.minFace;
  // A tile must hold a face larger than the one it is laid out for, or no level makes progress.
  if (minFace <= 0 || inputSize <= 2 * minInputFace) return tiles;
  while (minFace * wholeScale < minInputFace) {
    const side = Math.max(1, Math.floor((inputSize * minFace) / minInputFace));
    const faceLimit = Math.min(Math.ceil((2 * minInputFace) / wholeScale), Math.floor(side / 4));
    for (const y of starts(height, side, faceLimit)) {
      for (const x of starts(width, side, faceLimit)) {
        tiles.push({ x, y, width: Math.min(side, width - x), height: Math.min(side, height - y), faceLimit });
      }
    }
    minFace = faceLimit;
  }
  return tiles;
}

/** Tile origins along one side: stride `side - overlap`, the last tile flush with the edge. */
function starts(length: number, side: number, overlap: number): number[] {
  if (length <= side) return [0];
  const stride = side - overlap;
  const count = Math.ceil((length - side) / stride) + 1;
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(Math.min(i * stride, length - side));
  return out;
}

/** The pixels of `tile` as an image of its own. */
export function cropRgb(image: RgbImage, tile: Tile): RgbImage {
  const data = new Uint8Array(tile.width * tile.height * 3);
  const row = tile.width * 3;
  for (let y = 0; y < tile.height; y++) {
    const from = ((tile.y + y) * image.width + tile.x) * 3;
    data.set(image.data.subarray(from, from + row), y * row);
  }
  return { width: tile.width, height: tile.height, data };
}

/**
 * A tile's detections in image pixels, keeping only faces smaller than its `faceLimit` whose box
 * does not reach an edge the tile shares with another (a face cut there lies whole in another).
 */
export function fromTile(
  detections: readonly Detection[],
  tile: Tile,
  image: { readonly width: number; readonly height: number },
): Detection[] {
  const margin = 1;
  const left = tile.x > 0 ? margin : -Infinity;
  const top = tile.y > 0 ? margin : -Infinity;
  const right = tile.x + tile.width < image.width ? tile.width - margin : Infinity;
  const bottom = tile.y + tile.height < image.height ? tile.height - margin : Infinity;
  const move = (p: Point): Point => ({ x: p.x + tile.x, y: p.y + tile.y });
  return detections
    .filter((d) => {
      const { x1, y1, x2, y2 } = d.box;
      if (Math.max(x2 - x1, y2 - y1) >= tile.faceLimit) return false;
      return x1 > left && y1 > top && x2 < right && y2 < bottom;
    })
    .map((d) => ({
      ...d,
      box: { x1: d.box.x1 + tile.x, y1: d.box.y1 + tile.y, x2: d.box.x2 + tile.x, y2: d.box.y2 + tile.y },
      landmarks: d.landmarks.map(move),
    }));
}
