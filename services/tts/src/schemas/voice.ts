import { z } from 'zod';

/**
 * A Piper voice's `<voice>.onnx.json` (the fields this service reads; others are ignored), as
 * Piper's training writes it: sample rate, the espeak-ng voice that phonemizes for it, inference
 * defaults, the phoneme id map, speakers and language.
 */
export const PiperVoiceConfigSchema = z.object({
  audio: z.object({ sample_rate: z.number().int().min(4000).max(192_000) }),
  espeak: z.object({ voice: z.string().min(1) }),
  inference: z
    .object({
      noise_scale: z.number().min(0).max(10).default(0.667),
      length_scale: z.number().positive().max(10).default(1),
      noise_w: z.number().min(0).max(10).default(0.8),
    })
    .default({ noise_scale: 0.667, length_scale: 1, noise_w: 0.8 }),
  phoneme_type: z.string().default('espeak'),
  phoneme_id_map: z
    .record(z.string(), z.array(z.number().int().min(0)).min(1))
    .refine((m) => ['_', '^', '$'].every((k) => k in m), 'must map the pad "_", BOS "^" and EOS "$"'),
  num_speakers: z.number().int().min(1).default(1),
  speaker_id_map: z.record(z.string(), z.number().int().min(0)).default({}),
  language: z.object({ code: z.string().min(2) }).optional(),
  dataset: z.string().optional(),
});

export type PiperVoiceConfig = z.output<typeof PiperVoiceConfigSchema>;
