/** The languages this service speaks, and how voice names map to them. Pure. */

export const LANGUAGES = ['vi', 'en'] as const;
export type Language = (typeof LANGUAGES)[number];

/** `vi`, `vi_VN`, `vi-vn`, `en`, `en_US`, `en-us`, `en-gb-x-rp`... to a language, or undefined. */
export function languageOfVoice(code: string): Language | undefined {
  const primary = code.toLowerCase().split(/[-_]/)[0];
  return (LANGUAGES as readonly string[]).includes(primary ?? '') ? (primary as Language) : undefined;
}
