/**
 * Python's `urllib.parse.quote` with its default safe set, applied per path segment as Jupyter's
 * `url_escape` does: everything but letters, digits and `_.-~` is percent-encoded, including
 * `!'()*`, which `encodeURIComponent` leaves alone.
 */
export function pythonQuote(segment: string): string {
  return encodeURIComponent(segment).replace(
    /[!'()*]/g,
    char => `%${char.charCodeAt(0).toString(16).toUpperCase()}`
  );
}

/** Jupyter's `url_escape`: quote each segment of a `/`-separated path. */
export function urlEscapePath(apiPath: string): string {
  return apiPath.split('/').map(pythonQuote).join('/');
}

/**
 * Decode a percent-encoded URL path into text as tornado does for path arguments: bytes first,
 * then strict UTF-8. Returns undefined when the bytes are not UTF-8.
 */
export function decodeUrlPath(raw: string): string | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const char = raw.charCodeAt(i);
    if (char === 0x25 && /^[0-9a-fA-F]{2}$/.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (char < 0x80) {
      bytes.push(char);
    } else {
      bytes.push(...Buffer.from(raw[i], 'utf8'));
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}
