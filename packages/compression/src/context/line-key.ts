/**
 * A line's length and first and last characters as one number: a key that tells most
 * lines of a long text apart from a set of known ones without making a string of each
 * (a Map keyed by the line would copy and hash every line it is asked about). Equal
 * lines have equal keys; a key found is only a candidate, confirmed by the line itself.
 */
export function lineKey(text: string, start: number, end: number): number {
  if (end === start) return 0;
  return ((end - start) * 65_536 + text.charCodeAt(start)) * 65_536 + text.charCodeAt(end - 1);
}
