/** The languages a request may ask for, and tesseract's names for them. */

export const LANGUAGES = ['vi', 'en', 'vi+en'] as const;
export type Language = (typeof LANGUAGES)[number];

const TESSERACT: Readonly<Record<Language, readonly string[]>> = {
  vi: ['vie'],
  en: ['eng'],
  'vi+en': ['vie', 'eng'],
};

/** tesseract's `-l` argument: `vie+eng`. */
export function tesseractLanguages(language: Language): string {
  return TESSERACT[language].join('+');
}

/** The traineddata files a language needs. */
export function requiredTraineddata(language: Language): readonly string[] {
  return TESSERACT[language];
}
