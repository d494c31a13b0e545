import { describe, expect, it } from '@jest/globals';
import type { KbFeature } from '../../services/reasoning/src/domain/types.js';
import { FeatureIndex } from '../../services/reasoning/src/pipeline/clinical-map.js';

// The clinical map's name lookup: a base's own labels and synonyms, then the extractor's lexicon,
// through any term of the lexicon entry (the base may name the finding with another of its terms).

const feature = (
  id: string,
  label_en: string,
  label_vi: string | null,
  synonyms: string[] = [],
): KbFeature => ({
  id,
  kind: 'sign',
  label_en,
  label_vi,
  hpo: null,
  synonyms,
});

describe('FeatureIndex.lookup', () => {
  const index = new FeatureIndex(
    new Map([
      ['nuchal_rigidity', feature('nuchal_rigidity', 'Nuchal rigidity', 'Cứng gáy', ['cổ cứng'])],
      ['dyspnea', feature('dyspnea', 'Dyspnea', 'Khó thở')],
    ]),
  );

  it('finds a feature by id, label and synonym, with or without diacritics', () => {
    expect(index.lookup('nuchal_rigidity')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('Nuchal Rigidity')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('co cung')?.id).toBe('nuchal_rigidity');
  });

  it('reaches the base through any term of the lexicon entry', () => {
    // "neck stiffness" is the lexicon entry's name; the base knows only its term "nuchal rigidity".
    expect(index.lookup('neck stiffness')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('stiff neck')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('gáy cứng')?.id).toBe('nuchal_rigidity');
  });

  it('finds nothing for a name neither the base nor the lexicon knows', () => {
    expect(index.lookup('itchy elbow')).toBeUndefined();
    expect(index.lookup('hepatomegaly')).toBeUndefined(); // in the lexicon, not in this base
  });
});
