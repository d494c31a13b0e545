import { iou, type Box } from './geometry.js';

/**
 * Follows faces across video frames so a person who stays in view is reported once, not once per
 * frame. A detection continues the track whose last box overlaps it most (IoU above
 * `minIou`) among tracks seen within `maxGapFrames`; otherwise it starts a track. Each track
 * remembers the person it was recognized as with the best confidence and the frame where that
 * person was first recognized.
 */

export interface TrackerOptions {
  readonly minIou: number;
  /** Frames a track may go unseen (occlusion, a missed detection) and still continue. */
  readonly maxGapFrames: number;
}

export interface Observation {
  readonly box: Box;
  readonly recognized: boolean;
  readonly personName: string;
  readonly confidence: number;
}

export interface Track {
  readonly id: number;
  box: Box;
  lastFrame: number;
  frames: number;
  /** The person this track was recognized as (the best-confidence one), if any. */
  person: { name: string; confidence: number; firstFrame: number } | undefined;
}

export class FaceTracker {
  private readonly tracks: Track[] = [];
  private nextId = 1;

  constructor(private readonly options: TrackerOptions) {}

  /** Assigns the frame's observations to tracks (greedy by overlap); returns the track of each. */
  update(frame: number, observations: readonly Observation[]): Track[] {
    const live = this.tracks.filter((t) => frame - t.lastFrame <= this.options.maxGapFrames);
    const pairs: { t: Track; o: number; overlap: number }[] = [];
    live.forEach((t) => {
      observations.forEach((obs, o) => {
        const overlap = iou(t.box, obs.box);
        if (overlap >= this.options.minIou) pairs.push({ t, o, overlap });
      });
    });
    pairs.sort((a, b) => b.overlap - a.overlap);
    const assigned = new Map<number, Track>();
    const used = new Set<Track>();
    for (const { t, o } of pairs) {
      if (assigned.has(o) || used.has(t)) continue;
      assigned.set(o, t);
      used.add(t);
    }
    return observations.map((obs, o) => {
      let track = assigned.get(o);
      if (track === undefined) {
        track = { id: this.nextId++, box: obs.box, lastFrame: frame, frames: 0, person: undefined };
        this.tracks.push(track);
      }
      track.box = obs.box;
      track.lastFrame = frame;
      track.frames++;
      if (obs.recognized) {
        const p = track.person;
        if (p === undefined)
          track.person = { name: obs.personName, confidence: obs.confidence, firstFrame: frame };
        else if (p.name === obs.personName) p.confidence = Math.max(p.confidence, obs.confidence);
        else if (obs.confidence > p.confidence) {
          // A better match for someone else: the track is that person from here.
          track.person = { name: obs.personName, confidence: obs.confidence, firstFrame: frame };
        }
      }
      return track;
    });
  }

  /** Every track so far, in order of appearance. */
  all(): readonly Track[] {
    return this.tracks;
  }
}
