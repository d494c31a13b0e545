/**
 * `url` without the slashes it ends with (`http://llm:8000/v1//` -> `http://llm:8000/v1`): the form
 * base URLs are kept in before paths are appended. A loop: `/\/+$/` is tried from every slash of a
 * run, which reads a long run of slashes again from each (quadratic in its length).
 */
export function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url.charCodeAt(end - 1) === 0x2f) end--;
  return url.slice(0, end);
}
