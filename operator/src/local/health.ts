/** Asking a service how it is: `GET /livez` (serves HTTP) and `GET /readyz` (can do its work). */

export type Health =
  | { readonly live: false; readonly error: string }
  | { readonly live: true; readonly ready: boolean; readonly reason: string | null };

async function get(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return { status: response.status, body: await response.text() };
}

function reasonFrom(body: string, status: number): string {
  try {
    const parsed = JSON.parse(body) as unknown;
    if (parsed !== null && typeof parsed === 'object') {
      const { reason } = parsed as { reason?: unknown };
      if (typeof reason === 'string' && reason !== '') return reason;
    }
  } catch {
    // not JSON: fall through
  }
  return `GET /readyz answered ${status}`;
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause as { code?: unknown } | undefined;
    if (typeof cause?.code === 'string') return cause.code;
    return error.name === 'TimeoutError' ? 'timed out' : error.message;
  }
  return String(error);
}

/** Probes a service at `baseUrl` (`http://127.0.0.1:8001`). Never throws. */
export async function probe(baseUrl: string, timeoutMs = 2000): Promise<Health> {
  try {
    const livez = await get(`${baseUrl}/livez`, timeoutMs);
    if (livez.status !== 200) return { live: false, error: `GET /livez answered ${livez.status}` };
  } catch (error) {
    return { live: false, error: errorText(error) };
  }
  try {
    const readyz = await get(`${baseUrl}/readyz`, timeoutMs);
    if (readyz.status === 200) return { live: true, ready: true, reason: null };
    return { live: true, ready: false, reason: reasonFrom(readyz.body, readyz.status) };
  } catch (error) {
    return { live: true, ready: false, reason: `GET /readyz failed: ${errorText(error)}` };
  }
}
