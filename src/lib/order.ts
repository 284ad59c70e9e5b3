/** Code-point order of two strings (the spec's orderings: by code, by path, by market hash name), locale-free. */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
