import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { extractRuleFindings, foldText } from '../../services/reasoning/src/extract/index.js';
import { FeatureIndex, mapExtracted } from '../../services/reasoning/src/pipeline/clinical-map.js';
import { loadKnowledge } from '../../services/reasoning/src/pipeline/knowledge.js';

// The rule pass reads every finding the shipped base scores, by each of its names (label and
// synonyms, English and Vietnamese, the Vietnamese with and without diacritics), and reads it as
// absent after a negation. A name that reads as another feature, or as nothing, is a finding the
// engine would never see in a note.

const KB_DIR = join(process.cwd(), 'services/reasoning/kb/primary-care');

/** Vietnamese without diacritics, as notes typed on a phone are written. */
const strip = (s: string) => foldText(s).folded;

describe('the rule pass on the shipped base', () => {
  it('reads every name of every finding as that finding, present and negated, in both languages', async () => {
    const knowledge = await loadKnowledge([KB_DIR], 'none');
    const index = new FeatureIndex(knowledge.features, knowledge.lexicon);
    const read = (text: string) =>
      mapExtracted(index, extractRuleFindings(text, { lexicon: knowledge.lexicon }).findings).findings;
    const misses: string[] = [];
    let names = 0;
    // Words that only their diacritics tell apart ("tiểu rắt", frequency; "tiểu rát", dysuria) are
    // ambiguous without them: those are checked with diacritics only.
    const owners = new Map<string, Set<string>>();
    for (const f of knowledge.knowledgeBase.features)
      for (const t of [f.label_en, ...(f.label_vi === null ? [] : [f.label_vi]), ...f.synonyms])
        owners.set(strip(t), (owners.get(strip(t)) ?? new Set()).add(f.id));
    for (const f of knowledge.knowledgeBase.features) {
      if (f.kind === 'demographic' || f.id === 'illness_2_weeks_or_more') continue;
      const en = [f.label_en, ...f.synonyms.filter((s) => strip(s) === s.toLowerCase())];
      const vi = [
        ...(f.label_vi === null ? [] : [f.label_vi]),
        ...f.synonyms.filter((s) => strip(s) !== s.toLowerCase()),
      ];
      const check = (text: string, present: boolean, name: string) => {
        names++;
        const got = read(text).filter((m) => m.feature === f.id);
        if (!got.some((m) => m.present === present))
          misses.push(
            `${f.id}: "${text}" (${name}) → ${JSON.stringify(read(text).map((m) => [m.feature, m.present]))}`,
          );
      };
      for (const term of en) {
        // An abbreviation ("CHF") is read only in capitals; any other name in any case.
        const written = /[A-Z]/.test(term) && term === term.toUpperCase() ? term : term.toLowerCase();
        check(`Patient reports ${written}.`, true, term);
        check(`No ${written}.`, false, term);
      }
      for (const term of vi) {
        check(`Bệnh nhân ${term.toLowerCase()}.`, true, term);
        if ((owners.get(strip(term))?.size ?? 0) === 1) check(`Benh nhan ${strip(term)}.`, true, term);
        // "không nói được" (aphasia) has its negation in its name.
        if (!strip(term).startsWith('khong ')) check(`Không ${term.toLowerCase()}.`, false, term);
      }
    }
    expect(misses).toEqual([]);
    expect(names).toBeGreaterThan(1000);
  });
});
